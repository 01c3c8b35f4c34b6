package elect_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
)

// TestManyStaleDeletionProvesNoQuietGone: ObserveMany took the first event
// on a group's path since a read began for the one its last read's watch
// fired, proving the group deleted empty (see deletedUnseen). A deletion
// of the group's old node that reached the observer during a read of its
// new one (a read asked for by Refresh, say) was taken for the new one's
// watch: an owner that came and went in the new node, deleted with it
// before the next read, passed without a gap mark.
func TestManyStaleDeletionProvesNoQuietGone(t *testing.T) {
	group := groupPath(t) + "/g"
	addrs, maker := groupMaker(t, group)
	p := proxyTo(t, addrs[0])
	p.Delay(400 * time.Millisecond) // the next read lands after the test's transaction
	obs := session(t, []string{p.Addr()})
	ctx, cancel := context.WithCancel(context.Background())
	m, err := elect.ObserveMany(ctx, obs, elect.Workers(4))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-m.Done() })
	if err := m.Add(group, elect.AsRecipe(elect.RecipeLock)); err != nil {
		t.Fatal(err)
	}
	expect(t, m, elect.Snapshot, nilOwner)
	// Everything to the observer waits behind a sync of its own: the old
	// node's deletion reaches it after the refresh's read has begun.
	held := p.HoldReplyTo(faultproxy.OpSync)
	go func() { _, _ = obs.Conn().Sync("/") }()
	<-held
	inOne(t, maker, deleteOp(group), makeOp(group))
	before := p.Requests(faultproxy.OpGetChildren2, group)
	m.Refresh(group)
	for deadline := time.Now().Add(10 * time.Second); p.Requests(faultproxy.OpGetChildren2, group) == before; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the refresh never listed the group")
		}
	}
	p.Release()
	if c := expect(t, m, elect.Snapshot, nilOwner); !c.Gap {
		t.Errorf("the group replaced under the observer: %+v; want a gap", c)
	}
	inOne(t, maker, ownedOp(group, "unseen"), deleteOp(group+"/lock-0000000000"), deleteOp(group))
	waitGroupMissing(t, m, group)
	inOne(t, maker, makeOp(group), ownedOp(group, "seen"))
	if c, gap := untilOwner(t, m); !gap {
		t.Fatalf("an owner came and went in the new group, deleted with it, unseen, yet the next owner came with no gap mark: %+v", c)
	}
}
