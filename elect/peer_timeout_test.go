package elect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
)

// TestWaiterLearnsTheTimeoutsOfTheCopiesAhead: a waiter under
// ProveSessionEnd reads the session timeouts of the owners of the herald
// nodes below its own on their session nodes, and LongestTimeoutSeen is
// the longest of them and its own (herald run and herald lock take the
// bound they wait for an owner that cannot hear from it). The owner two
// ahead counts as much as the one just ahead: it may go by hand, and the
// one just ahead leave without vouching for it.
func TestWaiterLearnsTheTimeoutsOfTheCopiesAhead(t *testing.T) {
	for _, k := range sessionKinds {
		t.Run(k.name, func(t *testing.T) {
			addrs := sharedAddrs(t)
			g := groupPath(t)
			long := session(t, addrs, elect.WithSessionTimeout(6*time.Second))
			mid := session(t, addrs, elect.WithSessionTimeout(2*time.Second))
			short := session(t, addrs, elect.WithSessionTimeout(time.Second))
			opts := []elect.Option{elect.CreateParents(), elect.ProveSessionEnd()}
			ctx := ctxT(t, 30*time.Second)
			if _, err := k.join(ctx, long, g, "long", opts...); err != nil {
				t.Fatal(err)
			}
			b, _, err := long.Conn().Get(k.node(g, long))
			var content struct {
				TimeoutMS int64 `json:"timeout_ms"`
			}
			if err != nil || json.Unmarshal(b, &content) != nil || content.TimeoutMS != 6000 {
				t.Errorf("the owner's session node holds %q (%v), want its timeout, 6000 ms", b, err)
			}
			go func() { _, _ = k.join(ctx, mid, g, "mid", opts...) }()
			if err := waitChildren(t, g, 2); err != nil {
				t.Fatal(err)
			}
			if got := short.LongestTimeoutSeen(); got != time.Second {
				t.Errorf("before any wait: LongestTimeoutSeen = %v, want its own timeout, 1s", got)
			}
			go func() { _, _ = k.join(ctx, short, g, "short", opts...) }()
			eventually(t, 10*time.Second, "the last waiter to learn the owner's 6 s timeout", func() bool {
				return short.LongestTimeoutSeen() == 6*time.Second
			})
			if got := mid.LongestTimeoutSeen(); got != 6*time.Second {
				t.Errorf("the waiter just behind the owner: LongestTimeoutSeen = %v, want 6s", got)
			}
			if got := long.LongestTimeoutSeen(); got != 6*time.Second {
				t.Errorf("the owner: LongestTimeoutSeen = %v, want its own, 6s", got)
			}
		})
	}
}

// TestWaiterWithoutProofReadsNoTimeouts: without ProveSessionEnd a wait
// reads no session node, and LongestTimeoutSeen stays the session's own.
func TestWaiterWithoutProofReadsNoTimeouts(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	long := session(t, addrs, elect.WithSessionTimeout(6*time.Second))
	short := session(t, addrs, elect.WithSessionTimeout(time.Second))
	ctx := ctxT(t, 30*time.Second)
	k := sessionKinds[1]
	first, err := k.join(ctx, long, g, "long", elect.CreateParents(), elect.ProveSessionEnd())
	if err != nil {
		t.Fatal(err)
	}
	owned := make(chan error, 1)
	go func() { _, err := k.join(ctx, short, g, "short"); owned <- err }()
	if err := waitChildren(t, g, 2); err != nil {
		t.Fatal(err)
	}
	// Its wait has listed behind the owner (and read what it reads) by
	// the time it owns.
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-owned; err != nil {
		t.Fatal(err)
	}
	if got := short.LongestTimeoutSeen(); got != time.Second {
		t.Errorf("LongestTimeoutSeen = %v, want the session's own, 1s", got)
	}
}

// TestOwnersTimeoutLearnedWhenItsNodeGoes: a wait that could not read the
// owner's timeout while it waited (the read failed, here: the session
// node held no timeout then) learns it when it looks for the owner's
// release after the owner's node went by hand, which reads that session
// node anyway. Before, the wait's own timeout stood, and a runner waited
// too little behind an owner given a longer one.
func TestOwnersTimeoutLearnedWhenItsNodeGoes(t *testing.T) {
	for _, k := range sessionKinds {
		t.Run(k.name, func(t *testing.T) {
			addrs := sharedAddrs(t)
			g := groupPath(t)
			long := session(t, addrs, elect.WithSessionTimeout(6*time.Second))
			short := session(t, addrs, elect.WithSessionTimeout(time.Second))
			opts := []elect.Option{elect.CreateParents(), elect.ProveSessionEnd()}
			ctx := ctxT(t, 30*time.Second)
			first, err := k.join(ctx, long, g, "long", opts...)
			if err != nil {
				t.Fatal(err)
			}
			live := k.node(g, long)
			if _, err := long.Conn().Set(live, []byte(`{"herald":1}`), -1); err != nil {
				t.Fatal(err)
			}
			owned := make(chan *elect.Handle, 1)
			go func() {
				h, err := k.join(ctx, short, g, "short", opts...)
				if err == nil {
					owned <- h
				}
			}()
			if err := waitChildren(t, g, 2); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond) // the wait lists and reads, learning nothing
			if got := short.LongestTimeoutSeen(); got != time.Second {
				t.Fatalf("with no timeout on the owner's session node: LongestTimeoutSeen = %v, want 1s", got)
			}
			if _, err := long.Conn().Set(live, []byte(`{"herald":1,"timeout_ms":6000}`), -1); err != nil {
				t.Fatal(err)
			}
			if err := long.Conn().Delete(first.NodePath(), -1); err != nil {
				t.Fatal(err)
			}
			var h *elect.Handle
			select {
			case h = <-owned:
			case <-ctx.Done():
				t.Fatal("the waiter never owned")
			}
			if released, err := h.PredecessorReleased(ctx); err != nil || released {
				t.Fatalf("PredecessorReleased = %v, %v; want false: the owner's node was deleted by hand", released, err)
			}
			// The look reads every live session node where ours is too
			// (see TestOwnerGoneBeforeTheWaiterJoinedCountsItsTimeout):
			// the lock's session root is shared with every other test's
			// lock sessions, which may have longer timeouts.
			if got := short.LongestTimeoutSeen(); got < 6*time.Second || k.name == "election" && got != 6*time.Second {
				t.Errorf("after looking for the owner's release: LongestTimeoutSeen = %v, want the owner's 6s", got)
			}
		})
	}
}

// TestOwnerGoneBeforeTheWaiterJoinedCountsItsTimeout: the owner's node
// is deleted by hand before a copy given a shorter timeout joins, so the
// copy finds nobody ahead whose timeout it could read. When it looks for
// the release of an owner before it (as herald run and herald lock do
// before they start), it finds none, and reads the timeouts on every live
// session node kept where its own is: the deposed owner's session lives
// on, and its 6 s count.
func TestOwnerGoneBeforeTheWaiterJoinedCountsItsTimeout(t *testing.T) {
	for _, k := range sessionKinds {
		t.Run(k.name, func(t *testing.T) {
			addrs := sharedAddrs(t)
			short := session(t, addrs, elect.WithSessionTimeout(time.Second))
			ctx := ctxT(t, 30*time.Second)
			h := joinAfterOwnerGone(ctx, t, k, session(t, addrs, elect.WithSessionTimeout(6*time.Second)), short)
			if got := short.LongestTimeoutSeen(); got != time.Second {
				t.Errorf("before the look: LongestTimeoutSeen = %v, want its own timeout, 1s", got)
			}
			released, err := h.PredecessorReleased(ctx)
			if err != nil || released {
				t.Fatalf("PredecessorReleased = %v, %v; want false: the owner before went by hand", released, err)
			}
			// The lock's session root is shared with every other test's
			// lock sessions, which may have longer timeouts.
			if got := short.LongestTimeoutSeen(); got < 6*time.Second || k.name == "election" && got != 6*time.Second {
				t.Errorf("after the look: LongestTimeoutSeen = %v, want the deposed owner's 6s", got)
			}
		})
	}
}

// TestLiveTimeoutsReadAgainAfterAFailedRead: the look at every live
// session node reads them once per handle; a read that failed (a
// connection lost under it) is made at the next look. Before, the first
// look counted as done once the listing was answered, and a timeout whose
// read failed was never learned.
func TestLiveTimeoutsReadAgainAfterAFailedRead(t *testing.T) {
	addrs := sharedAddrs(t)
	k := sessionKinds[0] // an election: its office holds only this group's session nodes
	p := proxyTo(t, addrs[0])
	short := session(t, []string{p.Addr()}, elect.WithSessionTimeout(2*time.Second))
	ctx := ctxT(t, 30*time.Second)
	h := joinAfterOwnerGone(ctx, t, k, session(t, addrs, elect.WithSessionTimeout(6*time.Second)), short)
	if err := short.Settle(ctx); err != nil { // no read of its own under way to take the fault
		t.Fatal(err)
	}
	p.DropReplyTo(faultproxy.OpGetData)
	elect.LearnLiveTimeouts(ctx, h)
	if p.Dropped() != 1 {
		t.Fatalf("the proxy dropped %d replies; the test did not exercise the failed read", p.Dropped())
	}
	// The handle may look again itself once reconnected (its watches are
	// set again); either way the timeout is learned now.
	if err := short.AwaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	elect.LearnLiveTimeouts(ctx, h)
	if got := short.LongestTimeoutSeen(); got != 6*time.Second {
		t.Errorf("after a second look: LongestTimeoutSeen = %v; want the deposed owner's 6s, whose read had failed", got)
	}
	if h.TimeoutsUnread() {
		t.Error("every timeout read, yet TimeoutsUnread says some are not")
	}
}

// joinAfterOwnerGone makes long the owner of a new group of kind k, under
// ProveSessionEnd, deletes its node by hand, and has short join the group
// then: nothing ahead of short shows long's timeout.
func joinAfterOwnerGone(ctx context.Context, t *testing.T, k sessionKind, long, short *elect.Session) *elect.Handle {
	t.Helper()
	g := groupPath(t)
	opts := []elect.Option{elect.CreateParents(), elect.ProveSessionEnd()}
	first, err := k.join(ctx, long, g, "long", opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := long.Conn().Delete(first.NodePath(), -1); err != nil {
		t.Fatal(err)
	}
	h, err := k.join(ctx, short, g, "short", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestLiveTimeoutsUnlistableRootIsNotLeftUnread: a session root where
// this identity may create its session node but not list (an operator's
// ACL without READ) can never be read. Its listing must not count as
// outstanding: a runner's gate stays shut while timeouts are unread, and
// would wait forever. It takes the longest timeout it knows instead.
func TestLiveTimeoutsUnlistableRootIsNotLeftUnread(t *testing.T) {
	addrs := sharedAddrs(t)
	ctx := ctxT(t, 30*time.Second)
	root := groupPath(t) + "-sessions"
	raw := session(t, addrs)
	if _, err := raw.Conn().Create(path.Dir(root), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	if _, err := raw.Conn().Create(root, nil, 0, zk.WorldACL(zk.PermCreate|zk.PermDelete)); err != nil {
		t.Fatal(err)
	}
	s := session(t, addrs)
	l, err := elect.NewLock(s, groupPath(t), elect.CreateParents(), elect.ProveSessionEnd(), elect.SessionNodesUnder(root))
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Conn().Children(root); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("listing the session root: %v; the test needs it refused", err)
	}
	elect.LearnLiveTimeouts(ctx, h)
	if h.TimeoutsUnread() {
		t.Error("a session root this identity may not list leaves its timeouts unread for good: a runner's gate would never open")
	}
}

// TestOverwrittenSessionNodeTimeoutFromTheRunNote: an owner's session node
// overwritten by hand (an operator's set) carries no timeout, and one
// deleted with the office tells none either. A copy that joined after the
// owner's node was deleted by hand took its own shorter timeout for the
// bound, without a word, while the owner, frozen, could run its noted
// command for most of its longer one (found by an adversarial test). The
// owner's run note, there while its command may run, carries the timeout
// too: the copy reads it.
func TestOverwrittenSessionNodeTimeoutFromTheRunNote(t *testing.T) {
	for _, deleted := range []bool{false, true} {
		t.Run(fmt.Sprintf("deleted=%v", deleted), func(t *testing.T) {
			addrs := sharedAddrs(t)
			k := sessionKinds[0] // an election: its office holds only this group's session nodes
			long := session(t, addrs, elect.WithSessionTimeout(6*time.Second))
			short := session(t, addrs, elect.WithSessionTimeout(time.Second))
			ctx := ctxT(t, 30*time.Second)
			g := groupPath(t)
			opts := []elect.Option{elect.CreateParents(), elect.ProveSessionEnd()}
			owner, err := k.join(ctx, long, g, "long", opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := owner.MarkRunning(ctx); err != nil {
				t.Fatal(err)
			}
			if deleted {
				err = long.Conn().Delete(k.node(g, long), -1)
				if err == nil {
					err = long.Conn().Delete(g+"/"+elect.OfficeNode, -1)
				}
			} else {
				_, err = long.Conn().Set(k.node(g, long), []byte("restored by hand"), -1)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := long.Conn().Delete(owner.NodePath(), -1); err != nil {
				t.Fatal(err)
			}
			h, err := k.join(ctx, short, g, "short", opts...)
			if err != nil {
				t.Fatal(err)
			}
			released, err := h.PredecessorReleased(ctx)
			if err != nil || released {
				t.Fatalf("PredecessorReleased = %v, %v; want false: the owner before went by hand", released, err)
			}
			if got := short.LongestTimeoutSeen(); got != 6*time.Second {
				t.Errorf("LongestTimeoutSeen = %v; want the deposed owner's 6s, from its run note", got)
			}
		})
	}
}

// TestAbsurdTimeoutIsNoTimeout: a session node (or run note) written over
// by hand with a timeout no ZooKeeper session can have (the protocol
// carries it in 32 bits of milliseconds) tells no timeout. Taken, it was
// the longest seen, and a runner's bound, two thirds and more of it in
// nanoseconds, overflowed: with 6e12 ms the wait for the deposed owner
// came out negative and ended at once (found in review).
func TestAbsurdTimeoutIsNoTimeout(t *testing.T) {
	addrs := sharedAddrs(t)
	k := sessionKinds[0]
	long := session(t, addrs, elect.WithSessionTimeout(6*time.Second))
	short := session(t, addrs, elect.WithSessionTimeout(time.Second))
	ctx := ctxT(t, 30*time.Second)
	g := groupPath(t)
	opts := []elect.Option{elect.CreateParents(), elect.ProveSessionEnd()}
	owner, err := k.join(ctx, long, g, "long", opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := long.Conn().Set(k.node(g, long), []byte(`{"herald":1,"timeout_ms":6000000000000}`), -1); err != nil {
		t.Fatal(err)
	}
	if err := long.Conn().Delete(owner.NodePath(), -1); err != nil {
		t.Fatal(err)
	}
	h, err := k.join(ctx, short, g, "short", opts...)
	if err != nil {
		t.Fatal(err)
	}
	if released, err := h.PredecessorReleased(ctx); err != nil || released {
		t.Fatalf("PredecessorReleased = %v, %v; want false: the owner before went by hand", released, err)
	}
	if got := short.LongestTimeoutSeen(); got > math.MaxInt32*time.Millisecond {
		t.Errorf("LongestTimeoutSeen = %v; a timeout no session can have was taken", got)
	}
}

// TestLiveTimeoutsListTheSessionRootOnce: a lock keeps its session nodes
// and its run notes under one session root. The look for the timeouts of
// owners that may still run listed it twice, once for each; once is
// enough.
func TestLiveTimeoutsListTheSessionRootOnce(t *testing.T) {
	addrs := sharedAddrs(t)
	ctx := ctxT(t, 30*time.Second)
	p := proxyTo(t, addrs[0])
	root := groupPath(t) + "-sessions"
	s := session(t, []string{p.Addr()})
	l, err := elect.NewLock(s, groupPath(t), elect.CreateParents(), elect.ProveSessionEnd(), elect.SessionNodesUnder(root))
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := p.Requests(faultproxy.OpGetChildren2, root)
	elect.LearnLiveTimeouts(ctx, h)
	if n := p.Requests(faultproxy.OpGetChildren2, root) - before; n != 1 {
		t.Errorf("the look listed the session root %d times, want once", n)
	}
	if h.TimeoutsUnread() {
		t.Error("every timeout read, yet TimeoutsUnread says some are not")
	}
}
