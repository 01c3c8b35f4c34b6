package elect_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
)

func proxyTo(t *testing.T, target string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// A partitioned holder must learn it lost the lock before anyone else can
// take it: with the default policy, Done closes when the connection is
// suspended, which is before the servers expire the session.
func TestPartitionedHolderLosesBeforeNextOwner(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	p := proxyTo(t, addrs[0])
	const timeout = 2 * time.Second
	holder := session(t, []string{p.Addr()}, elect.WithSessionTimeout(timeout))
	waiter := session(t, addrs)
	ctx := ctxT(t, 30*time.Second)
	hl, _ := elect.NewLock(holder, path, elect.CreateParents())
	h, err := hl.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wl, _ := elect.NewLock(waiter, path)
	acquired := make(chan time.Time, 1)
	go func() {
		if wh, err := wl.Acquire(ctx); err == nil {
			acquired <- time.Now()
			_ = wh.Release(context.Background())
		}
	}()
	start := time.Now()
	p.Blackhole(true)
	var lostAt time.Time
	select {
	case <-h.Done():
		lostAt = time.Now()
	case <-time.After(timeout + 2*time.Second):
		t.Fatal("partitioned holder was never told")
	}
	if d := lostAt.Sub(start); d > timeout {
		t.Fatalf("holder told after %v, more than the session timeout %v", d, timeout)
	}
	if h.Reason() != elect.ReasonSuspended {
		t.Fatalf("reason %q, want %q", h.Reason(), elect.ReasonSuspended)
	}
	var gotAt time.Time
	select {
	case gotAt = <-acquired:
	case <-ctx.Done():
		t.Fatal("waiter never got the lock after the holder's session expired")
	}
	if !lostAt.Before(gotAt) {
		t.Fatalf("two owners: the waiter acquired at %v, the holder was told at %v", gotAt, lostAt)
	}
	// The holder's session is gone for good, and it says so.
	select {
	case <-holder.Done():
	case <-time.After(2 * timeout):
		t.Fatal("holder's session not declared lost after a whole timeout without a server")
	}
	if !errors.Is(holder.Err(), elect.ErrSessionLost) {
		t.Fatalf("session err %v", holder.Err())
	}
	p.Blackhole(false)
	if err := h.Checkpoint(ctx, []byte("late")); !errors.Is(err, elect.ErrNotLeader) {
		t.Fatalf("checkpoint after loss: %v", err)
	}
}

// Under LoseOnExpiry a short blip keeps ownership, and a real expiry ends it.
func TestLoseOnExpiryPolicy(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	p := proxyTo(t, addrs[0])
	const timeout = 2 * time.Second
	s := session(t, []string{p.Addr()}, elect.WithSessionTimeout(timeout))
	ctx := ctxT(t, 30*time.Second)
	e, _ := elect.NewElection(s, path, elect.CreateParents(), elect.WithLossPolicy(elect.LoseOnExpiry))
	h, err := e.Campaign(ctx, "steady")
	if err != nil {
		t.Fatal(err)
	}
	_, changed := s.State()
	p.Cut() // a blip: the client reconnects at once with the same session
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("the client never noticed the cut")
	}
	eventually(t, 5*time.Second, "reconnected", func() bool {
		st, _ := s.State()
		return st == elect.StateConnected && p.Conns() > 0
	})
	if !h.Held() {
		t.Fatalf("ownership lost on a blip under LoseOnExpiry: %q", h.Reason())
	}
	if err := h.Checkpoint(ctx, []byte("after blip")); err != nil {
		t.Fatalf("checkpoint after a blip: %v", err)
	}
	p.Blackhole(true)
	select {
	case <-h.Done():
	case <-time.After(3 * timeout):
		t.Fatal("expiry never ended ownership")
	}
	if h.Reason() != elect.ReasonSessionExpired || !errors.Is(h.Err(), elect.ErrSessionLost) {
		t.Fatalf("end: %q %v", h.Reason(), h.Err())
	}
	p.Blackhole(false)
}

// lossyGroup makes a group, and returns it with a fault proxy to the
// server, a session through that proxy, a direct session and a context.
func lossyGroup(t *testing.T) (string, *faultproxy.Proxy, *elect.Session, *elect.Session, context.Context) {
	t.Helper()
	addrs := sharedAddrs(t)
	path := groupPath(t)
	p := proxyTo(t, addrs[0])
	s := session(t, []string{p.Addr()})
	direct := session(t, addrs)
	ctx := ctxT(t, 30*time.Second)
	l, err := elect.NewLock(direct, path, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	warm, err := l.Acquire(ctx) // creates the path
	if err != nil {
		t.Fatal(err)
	}
	_ = warm.Release(ctx)
	return path, p, s, direct, ctx
}

// The reply to our create is lost: the node exists on the server, the
// client sees connection loss. We must find our node again, not create a
// second one.
func TestConnectionLossDuringCreate(t *testing.T) {
	path, p, s, direct, ctx := lossyGroup(t)
	p.DropReplyTo(faultproxy.OpCreate)
	e, _ := elect.NewElection(s, path)
	h, err := e.Campaign(ctx, "lossy")
	if err != nil {
		t.Fatalf("campaign across a lost create reply: %v", err)
	}
	if p.Dropped() != 1 {
		t.Fatalf("the proxy dropped %d replies; the test did not exercise the loss", p.Dropped())
	}
	onlyNode(t, direct, path, h, "after a lost create reply")
	_, st, err := direct.Conn().Exists(h.NodePath())
	if err != nil || st.EphemeralOwner != s.ID() {
		t.Fatalf("node owner 0x%x, our session 0x%x (%v)", st.EphemeralOwner, s.ID(), err)
	}
	// And a release whose reply is lost still removes the node.
	p.DropReplyTo(faultproxy.OpMulti)
	if err := h.Resign(ctx); err != nil {
		t.Fatalf("resign across a lost reply: %v", err)
	}
	eventually(t, 5*time.Second, "node removed", func() bool {
		ok, _, err := direct.Conn().Exists(h.NodePath())
		return err == nil && !ok
	})
}

// The reply to our create is lost, and so is the reply to the listing
// that looks for the node after reconnecting. Creating again then would
// leave the first node, ours, in the queue for the session's life: the
// waiter would wait behind its own node, and every later one behind both.
// The listing is asked again instead.
func TestConnectionLossDuringCreateThenDuringFind(t *testing.T) {
	path, p, s, direct, ctx := lossyGroup(t)
	p.DropReplyTo(faultproxy.OpCreate, faultproxy.OpCreate2)
	rearmed := make(chan struct{})
	go func() { // once the create's reply is gone, drop the next listing's
		defer close(rearmed)
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
			if p.Dropped() == 1 {
				p.DropReplyTo(faultproxy.OpGetChildren2)
				return
			}
		}
	}()
	l, _ := elect.NewLock(s, path)
	h, err := l.Acquire(ctx)
	<-rearmed
	if err != nil {
		t.Fatalf("acquire across lost create and listing replies: %v", err)
	}
	defer h.Release(ctx)
	if p.Dropped() != 2 {
		t.Fatalf("the proxy dropped %d replies, want 2; the test did not exercise the loss", p.Dropped())
	}
	onlyNode(t, direct, path, h, "after lost create and listing replies")
}

// onlyNode fails unless h's node is the only queue node in group.
func onlyNode(t *testing.T, s *elect.Session, group string, h *elect.Handle, when string) {
	t.Helper()
	children, _, err := s.Conn().Children(group)
	if err != nil {
		t.Fatal(err)
	}
	var queue []string
	for _, c := range children {
		if _, ok := elect.ParseSequence(c); ok {
			queue = append(queue, c)
		}
	}
	if len(queue) != 1 || queue[0] != h.Node() {
		t.Fatalf("queue %s: %v; want only our node %s", when, queue, h.Node())
	}
}

// A release that cannot reach the server keeps trying in the background
// after its ctx ends, so the node does not outlive the release.
func TestReleaseDuringPartitionIsNotOrphaned(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	p := proxyTo(t, addrs[0])
	s := session(t, []string{p.Addr()}, elect.WithSessionTimeout(6*time.Second))
	direct := session(t, addrs)
	ctx := ctxT(t, 30*time.Second)
	l, _ := elect.NewLock(s, path, elect.CreateParents(), elect.WithLossPolicy(elect.LoseOnExpiry))
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.Blackhole(true)
	rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err = h.Release(rctx)
	cancel()
	if err == nil {
		t.Fatal("release through a black hole reported success")
	}
	if h.Held() {
		t.Fatal("handle still held after Release")
	}
	p.Blackhole(false) // heal well before the session would expire
	eventually(t, 10*time.Second, "node deleted by the background release", func() bool {
		ok, _, err := direct.Conn().Exists(h.NodePath())
		return err == nil && !ok
	})
	if st, _ := s.State(); st == elect.StateLost {
		t.Fatal("the session expired: the test proved nothing about the background release")
	}
}

func TestUnreachableEnsembleNamesServers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	start := time.Now()
	_, err = elect.NewSession(context.Background(), []string{addr}, elect.WithConnectTimeout(1500*time.Millisecond))
	if !errors.Is(err, elect.ErrUnreachable) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err = %v; want ErrUnreachable naming %s", err, addr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("gave up after %v; the bound was 1.5s", d)
	}
}

func TestSessionTimeoutNotGranted(t *testing.T) {
	addrs := sharedAddrs(t)
	// The harness server grants no less than 2 ticks (400ms).
	_, err := elect.NewSession(ctxT(t, 20*time.Second), addrs, elect.WithSessionTimeout(150*time.Millisecond))
	if !errors.Is(err, elect.ErrSessionTimeout) || !strings.Contains(err.Error(), "granted") {
		t.Fatalf("err = %v; want ErrSessionTimeout saying what was granted", err)
	}
	s, err := elect.NewSession(ctxT(t, 20*time.Second), addrs, elect.WithSessionTimeout(150*time.Millisecond), elect.AcceptNegotiatedTimeout())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Timeout() < 400*time.Millisecond {
		t.Fatalf("granted %v, below the server's minimum", s.Timeout())
	}
}

func TestBadInputErrors(t *testing.T) {
	addrs := sharedAddrs(t)
	s := session(t, addrs)
	ctx := ctxT(t, 10*time.Second)
	for _, p := range []string{"jobs", "/jobs/", "/a//b", ""} {
		if _, err := elect.NewElection(s, p); !errors.Is(err, elect.ErrBadPath) {
			t.Errorf("NewElection(%q): %v, want ErrBadPath", p, err)
		}
	}
	l, err := elect.NewLock(s, groupPath(t)) // no CreateParents
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx); !errors.Is(err, elect.ErrNoParent) || !strings.Contains(err.Error(), "CreateParents") {
		t.Fatalf("acquire under a missing path: %v", err)
	}
	if _, err := elect.NewSession(ctx, nil); err == nil {
		t.Fatal("a session with no servers was accepted")
	}
	if _, err := elect.ReadGroup(ctx, s, groupPath(t)); !errors.Is(err, elect.ErrNoParent) {
		t.Fatalf("ReadGroup of a missing group: %v", err)
	}
	f := elect.Fence{Group: "/x", Node: "not-a-node", Term: 1}
	if err := f.Checkpoint(ctx, s, nil); err == nil {
		t.Fatal("a fence with a bad node name was accepted")
	}
}

// A waiter cut off from ZooKeeper still returns as soon as its ctx ends.
func TestCancelWaiterDuringPartition(t *testing.T) {
	w := waiterBehindAHolder(t)
	w.proxy.Blackhole(true)
	defer w.proxy.Blackhole(false)
	w.cancel()
	select {
	case err := <-w.done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled waiter returned %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a cancelled waiter stayed blocked behind a partition")
	}
}

// queuedWaiter is a lock waiter, on its own session through a proxy,
// queued behind a holder on a direct one.
type queuedWaiter struct {
	path          string
	proxy         *faultproxy.Proxy
	holder, waits *elect.Session
	node          string       // the waiter's node
	cancel        func()       // ends its wait
	done          <-chan error // what its Acquire returned
}

// waiterBehindAHolder queues a waiter behind a holder that keeps the lock
// until the test ends.
func waiterBehindAHolder(t *testing.T) queuedWaiter {
	t.Helper()
	addrs := sharedAddrs(t)
	w := queuedWaiter{path: groupPath(t), proxy: proxyTo(t, addrs[0]), holder: session(t, addrs)}
	w.waits = session(t, []string{w.proxy.Addr()}, elect.WithSessionTimeout(10*time.Second))
	ctx := ctxT(t, 30*time.Second)
	hl, _ := elect.NewLock(w.holder, w.path, elect.CreateParents())
	h, err := hl.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Release(context.Background()) })
	wl, _ := elect.NewLock(w.waits, w.path)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := wl.Acquire(wctx); done <- err }()
	w.cancel, w.done = cancel, done
	eventually(t, 5*time.Second, "waiter queued", func() bool {
		c, _, _ := w.holder.Conn().Children(w.path)
		for _, n := range c {
			if n != h.Node() {
				w.node = n
			}
		}
		return len(c) == 2
	})
	return w
}

// Recipe options validate their input, and a custom prefix and ACL reach
// the nodes herald creates.
func TestRecipeOptions(t *testing.T) {
	addrs := sharedAddrs(t)
	s := session(t, addrs)
	ctx := ctxT(t, 10*time.Second)
	for _, bad := range []elect.Option{elect.WithPrefix(""), elect.WithPrefix("a/b"), elect.WithACL(nil), elect.WithID(strings.Repeat("x", 2000))} {
		if _, err := elect.NewLock(s, groupPath(t), bad); err == nil {
			t.Error("a bad recipe option was accepted")
		}
	}
	path := groupPath(t)
	acl := zk.WorldACL(zk.PermRead | zk.PermWrite | zk.PermDelete | zk.PermAdmin)
	l, err := elect.NewLock(s, path, elect.CreateParents(), elect.WithPrefix("job-"), elect.WithACL(acl))
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h.Node(), "job-") {
		t.Fatalf("node %q does not carry the prefix job-", h.Node())
	}
	got, _, err := s.Conn().GetACL(h.NodePath())
	if err != nil || len(got) != 1 || got[0].Perms != acl[0].Perms {
		t.Fatalf("node ACL %+v (%v), want %+v", got, err, acl)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// One-shot reads (ReadGroup, ReadSingle, ReadCheckpoint) have their server
// catch up with the leader first, and answer nothing when it cannot: with
// the sync's reply lost, the read fails instead of answering from the
// server's own copy, which on a follower cut off from the leader may be
// seconds old.
func TestOneShotReadsCatchUpFirst(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	ctx := ctxT(t, 30*time.Second)
	l, _ := elect.NewLock(session(t, addrs), path, elect.CreateParents(), elect.WithID("holder"))
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	p := proxyTo(t, addrs[0])
	s := session(t, []string{p.Addr()})
	for name, read := range map[string]func() error{
		"ReadGroup": func() error { _, err := elect.ReadGroup(ctx, s, path); return err },
		"ReadSingle": func() error {
			_, err := elect.ReadSingle(ctx, s, path, elect.SingleNode{})
			return err
		},
		"ReadCheckpoint": func() error {
			_, err := elect.ReadCheckpoint(ctx, s, path)
			if errors.Is(err, elect.ErrNoCheckpoint) {
				return nil
			}
			return err
		},
	} {
		if err := read(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		before := p.Dropped()
		p.DropReplyTo(faultproxy.OpSync)
		err := read()
		if p.Dropped() != before+1 {
			t.Fatalf("%s asked no sync first (dropped %d replies, want %d)", name, p.Dropped(), before+1)
		}
		if !errors.Is(err, elect.ErrUnreachable) || !strings.Contains(err.Error(), "catching up with the ZooKeeper leader") {
			t.Fatalf("%s with the sync's reply lost: %v; want ErrUnreachable saying it could not catch up", name, err)
		}
		eventually(t, 10*time.Second, "the session back", func() bool { return read() == nil })
	}
}

// TestSuspendedOwnerKeepsItsNodeUntilItStops: a holder cut off for a
// moment (its client back within milliseconds, the session alive, as when
// a ZooKeeper member is killed) is told at once (Done), but the next in
// line does not own until the holder says it stopped (Release), or, had it
// never said so, until GiveBackDelay passed: otherwise the next owner
// would start while the old one's work, told only by Done, still ran.
func TestSuspendedOwnerKeepsItsNodeUntilItStops(t *testing.T) {
	addrs := sharedAddrs(t)
	// GiveBackDelay is a third of it: 2 s, well over a reconnect and the
	// 300 ms below on a busy machine (with 3 s, a slow reconnect let the
	// give-back come before the check, as it should).
	const timeout = 6 * time.Second
	for _, released := range []bool{true, false} {
		path := groupPath(t)
		// Two ways to the server, as to two members: the client moves to
		// the other at once.
		p, q := proxyTo(t, addrs[0]), proxyTo(t, addrs[0])
		holder := session(t, []string{p.Addr(), q.Addr()}, elect.WithSessionTimeout(timeout))
		waiter := session(t, addrs)
		ctx := ctxT(t, 30*time.Second)
		hl, _ := elect.NewLock(holder, path, elect.CreateParents())
		h, err := hl.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wl, _ := elect.NewLock(waiter, path)
		acquired := make(chan time.Time, 1)
		go func() {
			if wh, err := wl.Acquire(ctx); err == nil {
				acquired <- time.Now()
				_ = wh.Release(context.Background())
			}
		}()
		eventually(t, 10*time.Second, "the waiter queued", func() bool {
			cs, _, err := waiter.Conn().Children(path)
			return err == nil && len(cs) == 2
		})
		p.Cut() // the client reconnects at once, its session alive
		q.Cut()
		select {
		case <-h.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the holder was not told of the suspension")
		}
		lostAt := time.Now()
		if h.Reason() != elect.ReasonSuspended {
			t.Fatalf("reason %q, want %q", h.Reason(), elect.ReasonSuspended)
		}
		eventually(t, 5*time.Second, "reconnected", func() bool {
			st, _ := holder.State()
			return st == elect.StateConnected
		})
		// Connected again, with ample time for an eager give-back.
		time.Sleep(300 * time.Millisecond)
		select {
		case at := <-acquired:
			t.Fatalf("the waiter owned %v after the holder was told, before the holder stopped (GiveBackDelay %v)", at.Sub(lostAt), elect.GiveBackDelay(timeout))
		default:
		}
		if released {
			stopped := time.Now()
			if err := h.Release(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case at := <-acquired:
				if at.Before(stopped) {
					t.Fatalf("the waiter owned before the holder's Release")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the waiter never owned after the holder's Release")
			}
			if d := time.Since(stopped); d > elect.GiveBackDelay(timeout) {
				t.Errorf("the waiter owned %v after the Release: the Release did not hand over at once", d)
			}
			continue
		}
		select {
		case at := <-acquired:
			if d := at.Sub(lostAt); d < elect.GiveBackDelay(timeout)-100*time.Millisecond {
				t.Fatalf("the waiter owned %v after the holder was told, sooner than GiveBackDelay %v", d, elect.GiveBackDelay(timeout))
			}
		case <-time.After(timeout + 5*time.Second):
			t.Fatal("the waiter never owned: the node was never given back")
		}
		_ = h.Release(ctx)
	}
}

// TestSilentMemberIsPassedOver: a member that accepts connections but
// never answers (frozen, stalled) does not keep a session from the members
// that answer: each new session is up within its connect timeout, whichever
// server the client tries first.
func TestSilentMemberIsPassedOver(t *testing.T) {
	addrs := sharedAddrs(t)
	silent := proxyTo(t, addrs[0])
	silent.Blackhole(true)
	for i := range 6 {
		ctx := ctxT(t, 20*time.Second)
		start := time.Now()
		s, err := elect.NewSession(ctx, []string{silent.Addr(), addrs[0]}, elect.WithConnectTimeout(5*time.Second), elect.WithSessionTimeout(10*time.Second))
		if err != nil {
			t.Fatalf("session %d with one silent member: %v (after %v)", i, err, time.Since(start))
		}
		_ = s.Close()
	}
}

// TestConnectTimeoutIsKept: with only a silent member, NewSession gives up
// at its connect timeout, not a second later: the client's Close, which
// waits for an answer to its close request that no server will send,
// runs behind the caller.
func TestConnectTimeoutIsKept(t *testing.T) {
	addrs := sharedAddrs(t)
	silent := proxyTo(t, addrs[0])
	silent.Blackhole(true)
	const timeout = 2 * time.Second
	start := time.Now()
	_, err := elect.NewSession(ctxT(t, 20*time.Second), []string{silent.Addr()}, elect.WithConnectTimeout(timeout), elect.WithSessionTimeout(10*time.Second))
	took := time.Since(start)
	if err == nil {
		t.Fatal("a session with a silent member alone")
	}
	// Before, a whole second more: keep clear of it on a loaded machine.
	if took > timeout+700*time.Millisecond {
		t.Fatalf("NewSession gave up after %v with --connect-timeout %v: %v", took, timeout, err)
	}
}

// The reply to the create of a missing parent is lost (a server restarted,
// as in every rolling restart, or the client frozen meanwhile). The
// campaign must go on once the connection is back, not fail: before, it
// returned "create parent ...: connection closed", and herald run exited.
func TestConnectionLossWhileCreatingParents(t *testing.T) {
	addrs := sharedAddrs(t)
	p := proxyTo(t, addrs[0])
	s := session(t, []string{p.Addr()})
	direct := session(t, addrs)
	ctx := ctxT(t, 30*time.Second)
	path := groupPath(t) + "/below/group"
	// The first create, our node's, finds no group; its reply is lost
	// too, and the listing that looks for it finds no group either. Then
	// the reply to the first parent's create is lost.
	p.DropReplyTo(faultproxy.OpCreate)
	rearmed := make(chan struct{})
	go func() {
		defer close(rearmed)
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
			if p.Dropped() == 1 {
				p.DropReplyTo(faultproxy.OpCreate)
				return
			}
		}
	}()
	e, err := elect.NewElection(s, path, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Campaign(ctx, "lossy")
	<-rearmed
	if err != nil {
		t.Fatalf("campaign across lost replies to creates: %v", err)
	}
	if p.Dropped() != 2 {
		t.Fatalf("the proxy dropped %d replies, want 2; the test did not exercise the loss", p.Dropped())
	}
	onlyNode(t, direct, path, h, "after lost replies to creates")

	// The reply to the look for a parent is lost: only creating the
	// parents looks (exists).
	path = groupPath(t) + "/below/group"
	p.DropReplyTo(faultproxy.OpExists)
	e, err = elect.NewElection(s, path, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	if h, err = e.Campaign(ctx, "lossy"); err != nil {
		t.Fatalf("campaign across a lost reply to the look for a parent: %v", err)
	}
	if p.Dropped() != 3 {
		t.Fatalf("the proxy dropped %d replies, want 3; the test did not exercise the loss", p.Dropped())
	}
	onlyNode(t, direct, path, h, "after a lost reply to the look for a parent")
}

// The reply to our create is lost, then the reply to the read that checks
// that the node found by our marker is ours, and the caller gives up while
// the connection is down. The node is most likely ours: it is swept once
// the connection is back, not left in the queue, unowned, for the
// session's life.
func TestGivingUpWhileCheckingAFoundNodeLeavesNoNode(t *testing.T) {
	group, p, s, direct, ctx := lossyGroup(t)
	p.DropReplyTo(faultproxy.OpCreate, faultproxy.OpCreate2)
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	down := make(chan struct{})
	go func() { // the create's reply gone: drop the check's, then keep the connection down
		defer close(down)
		armed := false
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
			switch {
			case !armed && p.Dropped() == 1:
				p.DropReplyTo(faultproxy.OpExists)
				armed = true
			case armed && p.Dropped() == 2:
				p.Refuse(true)
				cancel()
				return
			}
		}
	}()
	l, _ := elect.NewLock(s, group)
	if h, err := l.Acquire(actx); err == nil {
		h.Release(ctx)
		t.Fatal("acquired although the caller gave up")
	}
	<-down
	if p.Dropped() != 2 {
		t.Fatalf("the proxy dropped %d replies, want 2; the test did not exercise the loss", p.Dropped())
	}
	p.Refuse(false)
	eventually(t, 10*time.Second, "our node swept", func() bool {
		children, _, err := direct.Conn().Children(group)
		return err == nil && !slices.ContainsFunc(children, func(c string) bool { _, ok := elect.ParseSequence(c); return ok })
	})
	if err := s.Err(); err != nil {
		t.Fatalf("the session ended (%v): the sweep proves nothing", err)
	}
}
