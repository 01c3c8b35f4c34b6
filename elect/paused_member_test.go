package elect_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// TestOwnerOnAPausedMemberLosesBeforeTheNextOwns: the member an owner's
// session is on is frozen (SIGSTOP) in a 3-node ensemble, and the
// owner's client knows no other member, so its session expires. Under
// either loss policy the owner must be told it lost no later than the
// next owner, on another member, owns (LoseOnSuspend: before it, with
// room for its work to stop), and once the next owner wrote, a fenced
// write of the old owner's term, made through another session as `herald
// checkpoint put` makes it, must be refused.
func TestOwnerOnAPausedMemberLosesBeforeTheNextOwns(t *testing.T) {
	for _, p := range []struct {
		name   string
		policy elect.LossPolicy
	}{{"suspend", elect.LoseOnSuspend}, {"expiry", elect.LoseOnExpiry}} {
		t.Run(p.name, func(t *testing.T) { pausedMemberOwner(t, p.policy) })
	}
}

func pausedMemberOwner(t *testing.T, policy elect.LossPolicy) {
	const timeout, tick = 1500 * time.Millisecond, 250 * time.Millisecond // cuttableEnsemble's tick
	ctx := ctxT(t, 60*time.Second)
	zkc, paused, other := cuttableEnsemble(t, ctx)
	path := groupPath(t)
	a, err := elect.NewElection(session(t, []string{zkc.Member(paused).Addr()}, elect.WithSessionTimeout(timeout)), path, elect.CreateParents(), elect.WithLossPolicy(policy))
	if err != nil {
		t.Fatal(err)
	}
	ha, err := a.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	old := ha.Fence()
	if err := ha.Checkpoint(ctx, []byte("old")); err != nil {
		t.Fatal(err)
	}
	onOther := session(t, []string{zkc.Member(other).Addr()}, elect.WithSessionTimeout(timeout))
	b, err := elect.NewElection(onOther, path)
	if err != nil {
		t.Fatal(err)
	}
	owned := make(chan *elect.Handle, 1)
	go func() {
		hb, err := b.Campaign(ctx, "b")
		if err != nil {
			t.Errorf("the waiter on the other member: %v", err)
		}
		owned <- hb
	}()
	time.Sleep(timeout) // the waiter is queued
	if err := zkc.Member(paused).Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = zkc.Member(paused).Resume() })
	pausedAt := time.Now()
	var lost, at time.Time
	var hb *elect.Handle
	done := ha.Done()
	for lost.IsZero() || at.IsZero() {
		select {
		case <-done:
			lost, done = time.Now(), nil
		case hb = <-owned:
			if hb == nil {
				return
			}
			at, owned = time.Now(), nil
		case <-ctx.Done():
			t.Fatal("the owner on the paused member never lost ownership, or nobody owned after it")
		}
	}
	t.Logf("the owner lost %v (%v), the next owned %v after the pause", lost.Sub(pausedAt).Round(time.Millisecond), ha.Reason(), at.Sub(pausedAt).Round(time.Millisecond))
	// Under LoseOnExpiry the leader's expiry is not ours to see: it may
	// come up to a sync period and half a tick before a timeout after the
	// newest sync the leader answered (see leader_lease.go).
	slack := time.Duration(0)
	if policy == elect.LoseOnExpiry {
		slack = timeout/8 + tick/2
	}
	if late := lost.Sub(at); late > slack {
		t.Errorf("two owners: the owner on the paused member held %v after the next owned", late.Round(time.Millisecond))
	}
	if err := hb.Checkpoint(ctx, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := old.Checkpoint(ctx, onOther, []byte("stale")); !errors.Is(err, elect.ErrNotLeader) {
		t.Errorf("a fenced write of the old term after the new one wrote: %v, want %v", err, elect.ErrNotLeader)
	}
	if cp, err := elect.ReadCheckpoint(ctx, onOther, path); err != nil || string(cp.Data) != "new" {
		t.Errorf("the checkpoint: %q, %v; want the next owner's", cp.Data, err)
	}
	_ = hb.Resign(context.Background())
}
