package elect_test

import (
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestRunNoteIsReadableUnderAChosenACL: a runner whose ACL lets only its
// own identity read still leaves a run note every copy can read for its
// timeout. A copy that could only see the note waited its own, shorter
// bound, and started its command beside a frozen owner's (found by an
// adversarial test).
func TestRunNoteIsReadableUnderAChosenACL(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	root := g + "-sessions"
	s := session(t, addrs)
	if err := s.Conn().AddAuth("digest", []byte("owner:pw")); err != nil {
		t.Fatal(err)
	}
	acl := elect.WithACL(append(zk.DigestACL(zk.PermAll, "owner", "pw"), zk.ACL{Perms: zk.PermAll &^ zk.PermRead, Scheme: "world", ID: "anyone"}))
	runningLock(t, s, g, root, acl)
	other := session(t, addrs).Conn()
	names, _, err := other.Children(root)
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, n := range names {
		if !elect.IsRunNoteName(n) {
			continue
		}
		if _, _, err := other.Get(root + "/" + n); err != nil {
			t.Errorf("another identity cannot read the run note %s: %v", n, err)
		}
		read++
	}
	if read != 1 {
		t.Fatalf("%d run notes under %s, want 1", read, root)
	}
}
