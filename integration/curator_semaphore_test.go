package integration_test

import (
	"strconv"
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
		refusedBeside(t, s, g, elect.DialectAuto, "Curator")
		cur.send("release c1")
		cur.expect("released c1", step)
	})

	t.Run("semaphore beside an owner steps it down", func(t *testing.T) {
		g := groupPath(t, "sem")
		h := guardedOwner(t, s, g)
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
		observedBeside(t, s, g, h, "InterProcessSemaphore")
		cur.send("release c3")
		cur.expect("released c3", step)
	})
}
