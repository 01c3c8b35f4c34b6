package elect_test

import (
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestSharedPathLetsItsMakerDelete: under an ACL that grants the
// identity write but not delete (auth::rwa, which herald takes, giving
// the parents of its nodes create and delete), MakeSharedPath gave the
// path that ACL as it stood. ZooKeeper checks a delete against the
// parent, so the identity could not delete its own nodes there (a run
// note under the session root, a source's claim) nor the path itself.
func TestSharedPathLetsItsMakerDelete(t *testing.T) {
	acl, err := elect.ParseACL("auth::rwa,world:anyone:r")
	if err != nil {
		t.Fatal(err)
	}
	s := session(t, sharedAddrs(t), elect.WithDigestAuth("maker:pw"), elect.WithDefaultACL(acl))
	root := groupPath(t)
	if err := elect.MakeSharedPath(s, root+"/shared"); err != nil {
		t.Fatal(err)
	}
	note := root + "/shared/note"
	if _, err := s.Conn().Create(note, nil, zk.FlagEphemeral, s.DefaultACL()); err != nil {
		t.Fatal(err)
	}
	if err := s.Conn().Delete(note, -1); err != nil {
		t.Errorf("deleting %s, made by the identity that made the path: %v", note, err)
	}
	if err := s.Conn().Delete(root+"/shared", -1); err != nil {
		t.Errorf("deleting %s, made by this identity: %v", root+"/shared", err)
	}
}
