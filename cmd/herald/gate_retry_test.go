package main

import (
	"context"
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
	for _, lock := range []bool{false, true} {
		name := "election"
		if lock {
			name = "lock"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			gateAfterSlowRead(t, lock)
		})
	}
}

func gateAfterSlowRead(t *testing.T, lock bool) {
	const longT, shortT = 40 * time.Second, 9 * time.Second
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
	deposed := joinForGate(ctx, t, lock, long, g, "deposed", opts)
	if err := long.Conn().Delete(deposed.NodePath(), -1); err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.New(addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	short, err := elect.NewSession(ctx, []string{p.Addr()}, elect.WithSessionTimeout(shortT))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { short.Close() })
	h := joinForGate(ctx, t, lock, short, g, "next", opts)
	if err := short.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	recipe := elect.RecipeElection
	if lock {
		recipe = elect.RecipeLock
	}

	// Let the listing of the session nodes through, then hold the read of
	// the deposed owner's past the look's deadline.
	listed := p.HoldReplyTo(faultproxy.OpGetChildren2)
	slowRead := make(chan struct{})
	go func() {
		<-listed
		p.Release()
		<-p.HoldReplyTo(faultproxy.OpGetData)
		close(slowRead)
		time.Sleep(5200 * time.Millisecond)
		p.Release()
	}()
	quit := make(chan struct{})
	defer close(quit)
	start := time.Now()
	gate := watchPredecessor(holding{h: h, recipe: recipe, timeout: shortT}, quit)
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
	// owner's bound would open it.
	want := start.Add(predecessorBound(longT))
	deadline := time.After(time.Until(start.Add(predecessorBound(shortT) + 2*time.Second)))
	for !gate.untilTime().After(want.Add(-time.Second)) {
		select {
		case <-gate.open:
			t.Fatalf("the gate opened %v after the first look, on the bound of a %v owner, while the deposed owner (a %v session, alive) may run its command for %v",
				time.Since(start).Round(time.Millisecond), shortT, longT, predecessorBound(longT))
		case <-deadline:
			t.Fatalf("the gate's bound still ends %v after its first look, not %v: it did not look again for the timeout it could not read (longest seen %v)",
				gate.untilTime().Sub(start).Round(time.Millisecond), predecessorBound(longT), short.LongestTimeoutSeen())
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
