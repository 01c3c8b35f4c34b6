package elect_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkherald/herald/elect"
)

// TestCheckpointWaitsForTheTermNoLongerThanItsContext: an owner cut off
// from ZooKeeper as it began to own (LoseOnExpiry keeps ownership while
// suspended) has not learned its term; Checkpoint waited for it until the
// session was declared lost, seconds past the caller's deadline. It now
// returns when its context ends.
func TestCheckpointWaitsForTheTermNoLongerThanItsContext(t *testing.T) {
	addrs, g, ctx := sharedAddrs(t), groupPath(t), ctxT(t, 60*time.Second)
	p := proxyTo(t, addrs[0])
	s := session(t, []string{p.Addr()}, elect.WithSessionTimeout(4*time.Second))
	e, err := elect.NewElection(s, g, elect.CreateParents(), elect.WithLossPolicy(elect.LoseOnExpiry))
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Campaign(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	p.Blackhole(true)
	defer p.Blackhole(false)
	for name, write := range map[string]func(context.Context) error{
		"Checkpoint":  func(c context.Context) error { return h.Checkpoint(c, []byte("x")) },
		"Acknowledge": func(c context.Context) error { return h.Acknowledge(c, "x") },
	} {
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		err := write(cctx)
		cancel()
		if d := time.Since(start); d > 2*time.Second || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s with a 500ms context, cut off: %v after %v; want the context's error at its deadline", name, err, d)
		}
	}
}

// TestOwnerThatCannotReadItsNodeGivesUp: with an ACL that does not let
// the owner's own session READ its node, ZooKeeper would never tell it
// that the node went, and the term never came: Term and Checkpoint
// blocked until Release. The owner now gives ownership up as it begins,
// saying what to grant, and its node goes.
func TestOwnerThatCannotReadItsNodeGivesUp(t *testing.T) {
	addrs, g, ctx := sharedAddrs(t), groupPath(t), ctxT(t, 30*time.Second)
	s := session(t, addrs)
	acl := append(zk.DigestACL(zk.PermAll, "someone-else", "pw"), zk.ACL{Perms: zk.PermCreate | zk.PermDelete, Scheme: "world", ID: "anyone"})
	l, err := elect.NewLock(s, g, elect.CreateParents(), elect.WithACL(acl))
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("an owner that may not read its node still holds after 10s")
	}
	if h.Reason() != elect.ReasonUnreadable || h.Err() == nil {
		t.Errorf("reason %q, err %v; want %q and what to grant", h.Reason(), h.Err(), elect.ReasonUnreadable)
	}
	if term := h.Term(); term != 0 {
		t.Errorf("term %d of an owner that never read its node; want 0", term)
	}
	if err := h.Checkpoint(ctx, []byte("x")); !errors.Is(err, elect.ErrNotLeader) {
		t.Errorf("checkpoint: %v; want %v", err, elect.ErrNotLeader)
	}
	gone := func() bool { ok, _, err := s.Conn().Exists(h.NodePath()); return err == nil && !ok }
	for deadline := time.Now().Add(10 * time.Second); !gone(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the node of the owner that gave up is still there after 10s")
		}
	}
}
