package elect_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// TestObserverTellsASessionEnd: an owner that keeps a session node
// (ProveSessionEnd, as herald run and herald lock do) and whose session
// ends without a release (here closed; an expiry is the same transaction)
// is reported "session ended", for an election (session node in its
// office) and a lock (under the default session root). A node deleted
// by hand while its session lives, and an owner that keeps no session
// node, stay "unknown": ZooKeeper does not say why they went.
func TestObserverTellsASessionEnd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lock   bool
		prove  bool
		byHand bool
		// first: the owner's session node is deleted by hand first: gone,
		// but not in the transaction that deleted the owner's node.
		first bool
		want  elect.Reason
	}{
		{"election, session closed", false, true, false, false, elect.ReasonSessionEnded},
		{"lock, session closed", true, true, false, false, elect.ReasonSessionEnded},
		{"election, node deleted by hand", false, true, true, false, elect.ReasonUnknown},
		{"lock, node deleted by hand", true, true, true, false, elect.ReasonUnknown},
		{"election, no session node", false, false, false, false, elect.ReasonUnknown},
		{"election, session node deleted before", false, true, true, true, elect.ReasonUnknown},
		{"lock, session node deleted before", true, true, true, true, elect.ReasonUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs := sharedAddrs(t)
			path := groupPath(t)
			obs, owner := session(t, addrs), session(t, addrs)
			ctx := ctxT(t, 30*time.Second)
			opts := []elect.Option{elect.CreateParents()}
			if tc.prove {
				opts = append(opts, elect.ProveSessionEnd())
			}
			var h *elect.Handle
			var err error
			if tc.lock {
				l, lerr := elect.NewLock(owner, path, opts...)
				if lerr != nil {
					t.Fatal(lerr)
				}
				h, err = l.Acquire(ctx)
			} else {
				e, eerr := elect.NewElection(owner, path, opts...)
				if eerr != nil {
					t.Fatal(eerr)
				}
				h, err = e.Campaign(ctx, "alpha")
			}
			if err != nil {
				t.Fatal(err)
			}
			o := observe(t, obs, path)
			expect(t, o, elect.Snapshot, func(c elect.Change) error {
				if c.Owner == nil || c.Owner.Node != h.Node() {
					return fmt.Errorf("owner %v, want %s", c.Owner, h.Node())
				}
				return nil
			})
			if tc.first {
				sessionNode := path + "/herald-office/" + fmt.Sprintf("session-%016x-live", uint64(owner.ID()))
				if tc.lock {
					sessionNode = elect.DefaultSessionRoot + "/" + fmt.Sprintf("session-%016x-live", uint64(owner.ID()))
				}
				if err := obs.Conn().Delete(sessionNode, -1); err != nil {
					t.Fatalf("delete the session node %s: %v", sessionNode, err)
				}
			}
			if tc.byHand {
				if err := obs.Conn().Delete(h.NodePath(), -1); err != nil {
					t.Fatal(err)
				}
			} else {
				_ = owner.Close()
			}
			end := expect(t, o, elect.OwnerChanged, nil)
			if end.Owner != nil || end.Previous == nil || end.Previous.Node != h.Node() || end.Reason != tc.want {
				t.Fatalf("end %+v: want no owner, previous %s, reason %q", end, h.Node(), tc.want)
			}
		})
	}
}
