package integration_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// The helpers of the tests with clients that hold a group outside its
// queue (a Kazoo Semaphore or NonBlockingLease, a Curator semaphore).

// refusedBeside checks that a herald Lock on g, in dialect d, refuses to
// acquire beside the holder, with ErrUnsafeGroup naming it (what).
func refusedBeside(t *testing.T, s *elect.Session, g string, d elect.Dialect, what string) {
	t.Helper()
	l, err := elect.NewLock(s, g, elect.WithDialect(d))
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.AcquireTimeout(ctxFor(t, step), 5*time.Second)
	if err == nil {
		_ = h.Resign(ctxFor(t, step))
		t.Fatalf("herald Lock acquired %s while a %s holds it: two owners", g, what)
	}
	if !errors.Is(err, elect.ErrUnsafeGroup) || !strings.Contains(err.Error(), what) {
		t.Fatalf("Acquire of %s beside a %s: %v; want ErrUnsafeGroup naming it", g, what, err)
	}
}

// guardedOwner takes a herald Lock on g that looks for hazards.
func guardedOwner(t *testing.T, s *elect.Session, g string) *elect.Handle {
	t.Helper()
	l, err := elect.NewLock(s, g, elect.CreateParents(), elect.WatchForHazards())
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(ctxFor(t, step))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// steppedDown checks that the owner h of g gives up within step, as two
// owners possible, now that a holder outside the queue (what) holds.
func steppedDown(t *testing.T, h *elect.Handle, g, what string) {
	t.Helper()
	select {
	case <-h.Done():
	case <-time.After(step):
		t.Fatalf("herald Lock still owns %s %v after a %s took it: two owners", g, step, what)
	}
	if h.Reason() != elect.ReasonTwoOwners {
		t.Fatalf("owner ended with %q (%v); want %q", h.Reason(), h.Err(), elect.ReasonTwoOwners)
	}
}

// observedBeside checks that a view of g names h's node as the owner and
// a hazard naming the holder outside the queue (what).
func observedBeside(t *testing.T, s *elect.Session, g string, h *elect.Handle, what string) {
	t.Helper()
	v, err := elect.ReadGroup(ctxFor(t, step), s, g)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v.Hazard, what) || v.Owner == nil || v.Owner.Node != h.Node() {
		t.Fatalf("view of %s with herald's owner %s beside a %s: owner %v, hazard %q; want that owner and a hazard naming it", g, h.Node(), what, v.Owner, v.Hazard)
	}
}

// ownUnguarded takes a herald Lock on g that never looks for hazards, and
// resigns it when the test ends.
func ownUnguarded(t *testing.T, s *elect.Session, g string) *elect.Handle {
	t.Helper()
	l, err := elect.NewLock(s, g, elect.CreateParents(), elect.NoHazardCheck())
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(ctxFor(t, step))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Resign(ctxFor(t, step)) })
	return h
}
