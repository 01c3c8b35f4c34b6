package elect_test

import (
	"context"
	"errors"
	"strings"
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

// TestOwnerThatMayNoLongerListItsGroupGivesUp: someone gives the group
// to another identity while herald owns it (an ACL that lets anyone
// create and delete in it, not list it), and then a client joins that
// cannot read herald's node (Kazoo's lock). ZooKeeper sent the owner's
// guard no event of it (it tells nothing of a node a session may not
// READ), and its listing, failing with NoAuth, was taken for connection
// trouble: the Kazoo client owned beside herald for its whole tenure (8 s
// in an adversarial test). The owner's look without a watch (every 30 s,
// 200 ms here) now finds the group unlistable, and it gives ownership
// up, saying what to grant.
func TestOwnerThatMayNoLongerListItsGroupGivesUp(t *testing.T) {
	defer elect.SetRecheckEvery(200 * time.Millisecond)() // 30 s by default
	addrs, g, ctx := sharedAddrs(t), groupPath(t), ctxT(t, 30*time.Second)
	h := lockedIn(t, session(t, addrs), g, elect.CreateParents())
	select {
	case <-h.Guarded():
	case <-ctx.Done():
		t.Fatal("the owner never listed its group")
	}
	admin := session(t, addrs)
	acl := append(zk.DigestACL(zk.PermAll, "someone-else", "pw"), zk.ACL{Perms: zk.PermCreate | zk.PermDelete | zk.PermWrite | zk.PermAdmin, Scheme: "world", ID: "anyone"})
	if _, err := admin.Conn().SetACL(g, acl, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Conn().Create(g+"/0123456789abcdef0123456789abcdef__lock__", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("an owner that may no longer list its group still holds 10s after a client joined it")
	}
	if h.Reason() != elect.ReasonGroupUnreadable || h.Err() == nil || !strings.Contains(h.Err().Error(), "grant the session READ on the group") {
		t.Errorf("reason %q, err %v; want %q and what to grant", h.Reason(), h.Err(), elect.ReasonGroupUnreadable)
	}
}
