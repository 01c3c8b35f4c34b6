package elect_test

import (
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestRunNoteNameTakenByAnotherSession: everyone may create under the
// session root, so a client without herald's credentials could make a
// runner's run note before it, under the name the runner's session id and
// group give it (both public). The runner took the node for its own (a
// create whose reply was lost), and the other client could then delete
// it whenever it liked: after a deleteall of the group, a new copy would
// find no note and start beside a frozen owner's command. The runner now
// notes under a name of its own, and its note outlives the other client.
func TestRunNoteNameTakenByAnotherSession(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	root := g + "-sessions"
	openT(t, addrs)
	s := session(t, addrs, elect.WithDigestAuth("owner:pw"))
	if err := elect.MakeSharedPath(s, root); err != nil {
		t.Fatal(err)
	}
	other := session(t, addrs) // no credentials
	h := fnv.New64a()
	h.Write([]byte(g))
	squat := fmt.Sprintf("%s/run-%016x-%016x-cmd", root, uint64(s.ID()), h.Sum64())
	if _, err := other.Conn().Create(squat, []byte("{}"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("another identity creates %s: %v", squat, err)
	}
	held := runningLock(t, s, g, root)
	note := held.RunNote()
	if _, st, err := s.Conn().Exists(note); err != nil || st.EphemeralOwner != s.ID() {
		t.Fatalf("the runner's note %s belongs to session 0x%x (%v), not the runner's 0x%x", note, st.EphemeralOwner, err, s.ID())
	}
	other.Close()
	eventually(t, 10*time.Second, "the other client's node to go", func() bool {
		ok, _, err := s.Conn().Exists(squat)
		return err == nil && !ok
	})
	if ok, _, err := s.Conn().Exists(note); err != nil || !ok {
		t.Fatalf("the runner's note %s went with the other client's session (exists %v, %v)", note, ok, err)
	}
}

// openT makes /t, where groupPath's paths go, open to all before a test's
// session with credentials makes a path there: made by that session, it
// would let no other test delete below it.
func openT(t *testing.T, addrs []string) {
	t.Helper()
	if err := elect.MakeSharedPath(session(t, addrs), "/t"); err != nil {
		t.Fatal(err)
	}
}
