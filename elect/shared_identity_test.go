package elect_test

import (
	"errors"
	"path"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestGroupSharedByTwoIdentitiesKeepsTheirOffice: an operator makes a
// group for two identities (the README's way to share one). The first
// leader created the office and the checkpoint with its own default ACL,
// which lets only its identity write: every later leader of the other
// identity could neither record its acknowledgment nor checkpoint. herald's
// side nodes now let in every identity the group does.
func TestGroupSharedByTwoIdentitiesKeepsTheirOffice(t *testing.T) {
	addrs, ctx := sharedAddrs(t), ctxT(t, 30*time.Second)
	g := groupPath(t)
	op := session(t, addrs)
	if _, err := op.Conn().Create(path.Dir(g), nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil && !errors.Is(err, gozk.ErrNodeExists) {
		t.Fatal(err)
	}
	if _, err := op.Conn().Create(g, nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	lead := func(user string) *elect.Handle {
		t.Helper()
		e, err := elect.NewElection(session(t, addrs, elect.WithDigestAuth(user+":pw-"+user)), g)
		if err != nil {
			t.Fatal(err)
		}
		h, err := e.Campaign(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Acknowledge(ctx, user); err != nil {
			t.Errorf("%s's acknowledgment: %v", user, err)
		}
		if err := h.Checkpoint(ctx, []byte("by "+user)); err != nil {
			t.Errorf("%s's checkpoint: %v", user, err)
		}
		return h
	}
	if err := lead("alice").Resign(ctx); err != nil {
		t.Fatal(err)
	}
	bob := lead("bob")
	if cp, err := elect.ReadCheckpoint(ctx, op, g); err != nil || string(cp.Data) != "by bob" {
		t.Errorf("the checkpoint after bob's: %q, %v; want bob's", cp.Data, err)
	}
	if err := bob.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}
