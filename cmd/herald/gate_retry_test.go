package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestGateLooksAgainAfterASlowTimeoutRead: the owner before ours was
// deposed by hand (its node deleted) while its session, with a 40 s
// timeout, lives on; ours has 9 s. The gate's first look lists the live
// session nodes, but the read of the deposed owner's comes back after the
// look's 5 s deadline (a slow server, a session root of many nodes). The
// connection stays up and nothing rewrites a watched node, so no watch
// fires: the gate must look again on its own, learn the 40 s, and stay
// shut past the bound a 9 s owner would give. Before, it opened on that
// short bound while the deposed owner's command might still run.
func TestGateLooksAgainAfterASlowTimeoutRead(t *testing.T) {
	gateAfterSlowReadBoth(t, false)
}

// TestGateAfterAReleaseLooksAgainAfterASlowTimeoutRead: the same deposed
// owner, but a library owner came between it and ours, and released.
// Such a release vouches only for its own work, so the gate waits the
// bound from when that owner was first seen lowest. It used to take that
// bound from the first look alone, and to open 6 s after it with the
// 40 s owner's timeout unread (found by a review).
func TestGateAfterAReleaseLooksAgainAfterASlowTimeoutRead(t *testing.T) {
	gateAfterSlowReadBoth(t, true)
}

func gateAfterSlowReadBoth(t *testing.T, between bool) {
	for _, lock := range []bool{false, true} {
		name := "election"
		if lock {
			name = "lock"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			gateAfterSlowRead(t, lock, between)
		})
	}
}

// gateAfterSlowRead deposes a 40 s owner by hand, lets a 9 s copy own
// next (behind a library owner that releases, when between), holds the
// read of the deposed owner's session node past the gate's first look,
// and checks that the gate learns the 40 s before the 9 s bound would
// open it.
func gateAfterSlowRead(t *testing.T, lock, between bool) {
	h, short, p := gateSetup(t, lock, between)
	gateLearnsTheLongTimeout(t, lock, between, h, short, p, 0)
}

// TestGateStaysShutWhileTimeoutReadsFail: the read of the deposed owner's
// session node keeps coming back too late, look after look, for longer
// than the 9 s copy's bound. The gate took one more look at the end of
// that bound and, that one failing too, opened on it; it now stays shut
// until the read is answered, and then waits the 40 s owner's bound.
func TestGateStaysShutWhileTimeoutReadsFail(t *testing.T) {
	t.Parallel()
	h, short, p := gateSetup(t, true, false)
	// Past the bound, and the one more look the gate used to take.
	gateLearnsTheLongTimeout(t, true, false, h, short, p, predecessorBound(shortT)+6*time.Second)
}

const longT, shortT = 40 * time.Second, 9 * time.Second

// gateSetup deposes a 40 s owner by hand and lets a 9 s copy, connected
// through p, own next (behind a library owner that releases, when
// between).
func gateSetup(t *testing.T, lock, between bool) (h *elect.Handle, short *elect.Session, p *faultproxy.Proxy) {
	_, h, short, p = gateSetupDeposed(t, lock, between)
	return h, short, p
}

// gateSetupDeposed is gateSetup, returning the deposed owner's handle too.
func gateSetupDeposed(t *testing.T, lock, between bool) (deposed, h *elect.Handle, short *elect.Session, p *faultproxy.Proxy) {
	addrs := zktest.Shared(t).Addrs()
	g := uniq(t)
	opts := []elect.Option{elect.CreateParents(), elect.ProveSessionEnd(), elect.SessionNodesUnder(g + "-sessions")}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	long, err := elect.NewSession(ctx, addrs, elect.WithSessionTimeout(longT))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { long.Close() })
	deposed = joinForGate(ctx, t, lock, long, g, "deposed", opts)
	// A runner knows its term before its command starts.
	if err := waitFor(10*time.Second, func() bool { return deposed.Term() != 0 }); err != nil {
		t.Fatalf("the deposed owner never learned its term: %v", err)
	}
	if err := long.Conn().Delete(deposed.NodePath(), -1); err != nil {
		t.Fatal(err)
	}
	var lib *elect.Handle
	if between {
		libS, err := elect.NewSession(ctx, addrs, elect.WithSessionTimeout(shortT))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { libS.Close() })
		lib = joinForGate(ctx, t, lock, libS, g, "library", opts)
	}
	p, err = faultproxy.New(addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	short, err = elect.NewSession(ctx, []string{p.Addr()}, elect.WithSessionTimeout(shortT))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { short.Close() })
	joined := make(chan *elect.Handle, 1)
	go func() { joined <- joinForGate(ctx, t, lock, short, g, "next", opts) }()
	if between {
		if err := waitFor(10*time.Second, func() bool { c, _, _ := long.Conn().Children(g); return len(c) >= 2 }); err != nil {
			t.Fatalf("the copy did not queue behind the library owner: %v", err)
		}
		if err := lib.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	h = <-joined
	if h == nil {
		t.Fatal("the copy did not come to own")
	}
	if err := short.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	return deposed, h, short, p
}

// gateLearnsTheLongTimeout starts h's gate, holds the read of the deposed
// owner's session node past the deadline of the first slow looks, and
// checks that the gate stays shut and learns the 40 s, however long
// the reads take.
func gateLearnsTheLongTimeout(t *testing.T, lock, between bool, h *elect.Handle, short *elect.Session, p *faultproxy.Proxy, slowFor time.Duration) {
	recipe := elect.RecipeElection
	if lock {
		recipe = elect.RecipeLock
	}
	// Let the listing of the session nodes through, then hold the read of
	// the deposed owner's past the look's deadline, slow times.
	listed := p.HoldReplyTo(faultproxy.OpGetChildren2)
	slowRead := make(chan struct{})
	armed := time.Now()
	go func() {
		<-listed
		p.Release()
		for i := 0; ; i++ {
			<-p.HoldReplyTo(faultproxy.OpGetData)
			if i == 0 {
				close(slowRead)
			}
			time.Sleep(5200 * time.Millisecond)
			p.Release()
			if time.Since(armed) >= slowFor {
				return
			}
		}
	}()
	quit := make(chan struct{})
	defer close(quit)
	start := time.Now()
	o := holding{h: h, recipe: recipe, timeout: shortT}
	gate := watchPredecessor(o, quit)
	select {
	case <-slowRead:
	default:
		t.Fatal("the first look did not read the deposed owner's session node: the test no longer holds what it means to")
	}
	if got := short.LongestTimeoutSeen(); got != shortT {
		t.Fatalf("the held read was answered in time (longest timeout seen %v): the test no longer cuts the first look short", got)
	}
	if !h.TimeoutsUnread() {
		t.Fatal("a look whose read timed out does not say that timeouts are unread")
	}
	// The gate must learn the 40 s by looking again, before the 9 s
	// owner's bound would open it. The bound counts from the first look,
	// or, behind a release, from when that owner was first seen lowest.
	from := start
	if between {
		from = h.PredecessorLowestSince()
	}
	want := from.Add(predecessorBound(longT))
	deadline := time.After(max(time.Until(from.Add(predecessorBound(shortT)+2*time.Second)), time.Until(armed.Add(slowFor+8*time.Second))))
	for !gate.after(o).After(want.Add(-time.Second)) {
		select {
		case <-gate.open:
			t.Fatalf("the gate opened %v after the first look, on the bound of a %v owner, while the deposed owner (a %v session, alive) may run its command for %v",
				time.Since(start).Round(time.Millisecond), shortT, longT, predecessorBound(longT))
		case <-deadline:
			t.Fatalf("the gate opens %v after its first look, not %v after %s: it did not look again for the timeout it could not read (longest seen %v)",
				gate.after(o).Sub(start).Round(time.Millisecond), predecessorBound(longT), from.Format("15:04:05.000"), short.LongestTimeoutSeen())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if got := short.LongestTimeoutSeen(); got != longT {
		t.Errorf("longest timeout seen %v after the gate looked again, want the deposed owner's %v", got, longT)
	}
	if h.TimeoutsUnread() {
		t.Error("TimeoutsUnread still says so after every timeout was read")
	}
	select {
	case <-gate.open:
		t.Fatal("the gate opened although its bound was lengthened")
	default:
	}
}

// joinForGate makes a herald owner (lock) or candidate (election) named id
// in g, and returns its handle once it owns.
func joinForGate(ctx context.Context, t *testing.T, lock bool, s *elect.Session, g, id string, opts []elect.Option) *elect.Handle {
	t.Helper()
	if lock {
		l, err := elect.NewLock(s, g, append(opts, elect.WithID(id))...)
		if err != nil {
			t.Fatal(err)
		}
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	e, err := elect.NewElection(s, g, opts...)
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Campaign(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestGateOpensOnAVouchedRecordWithTimeoutsUnread: the gate's first look
// cannot list the session root in time, so timeouts are unread; then the
// deposed owner's runner hears, stops its command and records so, which
// vouches for every owner before it. The wait no longer depends on any
// bound, and later looks, finding that record, read no timeouts: the
// gate kept waiting for them, and `run` (or `lock` without --timeout)
// held ownership without ever starting its command (found by a review).
func TestGateOpensOnAVouchedRecordWithTimeoutsUnread(t *testing.T) {
	t.Parallel()
	deposed, h, _, p := gateSetupDeposed(t, false, false)
	deposed.Vouch() // a herald runner, whose own gate had opened
	select {
	case <-deposed.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the deposed owner never heard that its node went")
	}
	listed := p.HoldReplyTo(faultproxy.OpGetChildren2)
	go func() {
		<-listed
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := deposed.RecordStopped(ctx); err != nil {
			t.Errorf("the deposed runner could not record that its command stopped: %v", err)
		}
		time.Sleep(5300 * time.Millisecond) // past the look's deadline
		p.Release()
	}()
	quit := make(chan struct{})
	defer close(quit)
	o := holding{h: h, recipe: elect.RecipeElection, timeout: shortT}
	gate := watchPredecessor(o, quit)
	if !h.TimeoutsUnread() {
		t.Fatal("the first look read every timeout: the test no longer holds the listing past its deadline")
	}
	looked := time.Now()
	select {
	case <-gate.open:
	case <-time.After(10 * time.Second):
		t.Fatalf("the gate is still shut %v after its first look, behind a release on record that vouches for every owner before it (timeouts unread: %v)",
			time.Since(looked).Round(time.Millisecond), h.TimeoutsUnread())
	}
	if !gate.recorded.Load() || !h.PredecessorVouched() {
		t.Errorf("the gate opened, but not on the deposed runner's record (recorded %v, vouched %v)", gate.recorded.Load(), h.PredecessorVouched())
	}
}

// TestGateOpensOnceOurSessionIsGone: timeouts unread, then our own session
// ends. Every look fails from then on, and the gate waited for a read
// that could never come; giveUpUnstarted, which waits for the gate before
// giving ownership back, then never returned. Once the session is gone
// nothing of ours can be recorded nor started, so the gate opens at once.
func TestGateOpensOnceOurSessionIsGone(t *testing.T) {
	t.Parallel()
	h, short, p := gateSetup(t, true, false)
	listed := p.HoldReplyTo(faultproxy.OpGetChildren2)
	go func() {
		<-listed
		time.Sleep(5300 * time.Millisecond) // past the look's deadline
		p.Release()
	}()
	quit := make(chan struct{})
	defer close(quit)
	start := time.Now()
	o := holding{h: h, recipe: elect.RecipeLock, timeout: shortT}
	gate := watchPredecessor(o, quit)
	if !h.TimeoutsUnread() {
		t.Fatal("the first look read every timeout: the test no longer holds the listing past its deadline")
	}
	short.Close()
	select {
	case <-h.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the handle did not end with its session")
	}
	ended := time.Now()
	select {
	case <-gate.open:
	case <-time.After(time.Until(start.Add(predecessorBound(shortT) + 5*time.Second))):
		t.Fatalf("the gate is still shut %v after its first look with our session closed (timeouts unread: %v): giveUpUnstarted would wait for it forever",
			time.Since(start).Round(time.Millisecond), h.TimeoutsUnread())
	}
	// Nothing of ours starts on a gone session: the gate has nothing
	// left to wait for (it used to wait out its bound).
	if took := time.Since(ended); took > time.Second {
		t.Errorf("the gate opened %v after our session ended, want at once", took.Round(time.Millisecond))
	}
}

// TestHoldAndRunReturnsWhenTheSessionEndsWithTimeoutsUnread: the same,
// end to end. holdAndRun, waiting at the gate with timeouts unread when
// its session ended, never returned; now it reports the loss, and the
// command never starts.
func TestHoldAndRunReturnsWhenTheSessionEndsWithTimeoutsUnread(t *testing.T) {
	t.Parallel()
	h, short, p := gateSetup(t, true, false)
	listed := p.HoldReplyTo(faultproxy.OpGetChildren2)
	go func() {
		<-listed
		time.Sleep(5300 * time.Millisecond)
		short.Close() // the session ends while the listing is unanswered
		p.Release()
	}()
	ran := filepath.Join(t.TempDir(), "ran")
	a := &app{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	done := make(chan error, 1)
	go func() {
		done <- a.holdAndRun(context.Background(), holding{h: h, recipe: elect.RecipeLock, args: []string{"touch", ran}, timeout: shortT})
	}()
	limit := predecessorBound(shortT) + 15*time.Second
	select {
	case err := <-done:
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitNotLeader {
			t.Errorf("holdAndRun returned %v, want exit %d: ownership was lost before the command started", err, exitNotLeader)
		}
	case <-time.After(limit):
		t.Fatalf("holdAndRun still waits %v after it began, its session closed (timeouts unread: %v)", limit, h.TimeoutsUnread())
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command ran although the session had ended before it could start")
	}
}
