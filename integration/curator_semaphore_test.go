package integration_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestHeraldNeverOwnsBesideACuratorSemaphore: Curator's
// InterProcessSemaphoreMutex (an InterProcessSemaphoreV2 of one lease)
// given herald's group path keeps nothing in it but two parents, "locks"
// (a mutex among semaphore clients) and "leases" (the leases), so neither
// side sees the other's queue nodes. herald used to read both as clutter
// and own beside Curator's holder, in either order.
func TestHeraldNeverOwnsBesideACuratorSemaphore(t *testing.T) {
	zkc := zktest.Shared(t)
	cur := startCurator(t, zkc.ConnectString(), curatorSession)
	s := session(t, zkc.Addrs())

	t.Run("held semaphore refuses", func(t *testing.T) {
		g := groupPath(t, "sem")
		cur.send("hold semaphore-mutex " + g + " c1")
		cur.expect("acq c1", step)
		l, err := elect.NewLock(s, g)
		if err != nil {
			t.Fatal(err)
		}
		h, err := l.AcquireTimeout(ctxFor(t, step), 5*time.Second)
		if err == nil {
			_ = h.Resign(ctxFor(t, step))
			t.Fatalf("herald Lock acquired %s while Curator's InterProcessSemaphoreMutex holds it: two owners", g)
		}
		if !errors.Is(err, elect.ErrUnsafeGroup) || !strings.Contains(err.Error(), "Curator") {
			t.Fatalf("Acquire beside a held Curator semaphore: %v; want ErrUnsafeGroup naming Curator's semaphore", err)
		}
		cur.send("release c1")
		cur.expect("released c1", step)
	})

	t.Run("semaphore beside an owner steps it down", func(t *testing.T) {
		g := groupPath(t, "sem")
		l, err := elect.NewLock(s, g, elect.CreateParents(), elect.WatchForHazards())
		if err != nil {
			t.Fatal(err)
		}
		h, err := l.Acquire(ctxFor(t, step))
		if err != nil {
			t.Fatal(err)
		}
		down := make(chan int64, 1)
		go func() { <-h.Done(); down <- time.Now().UnixNano() }()
		cur.send("hold semaphore-mutex " + g + " c2")
		acq, _ := strconv.ParseInt(cur.expect("acq c2", step)[0], 10, 64)
		var at int64
		select {
		case at = <-down:
		case <-time.After(step):
			t.Fatalf("herald Lock still owns %s %v after Curator's semaphore acquired there: two owners", g, step)
		}
		if h.Reason() != elect.ReasonTwoOwners {
			t.Fatalf("owner ended with %q (%v); want %q", h.Reason(), h.Err(), elect.ReasonTwoOwners)
		}
		// One listing of the group's change bounds the overlap; Curator,
		// which never sees herald's node, cannot be kept from owning.
		t.Logf("herald's owner stepped down %v after Curator said it acquired", time.Duration(at-acq))
		cur.send("release c2")
		cur.expect("released c2", step)
	})
	t.Run("observers tell a semaphore beside an owner", func(t *testing.T) {
		g := groupPath(t, "sem")
		h := ownUnguarded(t, s, g)
		cur.send("hold semaphore-mutex " + g + " c3")
		cur.expect("acq c3", step)
		v, err := elect.ReadGroup(ctxFor(t, step), s, g)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(v.Hazard, "InterProcessSemaphore") || v.Owner == nil || v.Owner.Node != h.Node() {
			t.Fatalf("view of %s with herald's owner %s beside Curator's semaphore: owner %v, hazard %q; want that owner and a hazard naming the semaphore", g, h.Node(), v.Owner, v.Hazard)
		}
		cur.send("release c3")
		cur.expect("released c3", step)
	})
}
