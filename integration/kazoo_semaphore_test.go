package integration_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestHeraldNeverOwnsBesideAKazooSemaphore: Kazoo's Semaphore keeps its
// leases as ephemeral nodes named by a bare UUID (no sequence) right in its
// path, and counts every child of that path as a lease, herald's queue
// nodes included. With one lease it is a mutex, and a group shared with
// herald, in either order, must have one owner. herald used to ignore a
// child without a sequence: it owned a group whose lease Kazoo held.
func TestHeraldNeverOwnsBesideAKazooSemaphore(t *testing.T) {
	zkc := zktest.Shared(t)
	kz := startKazoo(t, zkc.ConnectString(), kazooSession)
	s := session(t, zkc.Addrs())
	raw := rawConn(t, zkc.Addrs(), 4*time.Second)

	for _, d := range []elect.Dialect{elect.DialectAuto, elect.DialectKazoo} {
		t.Run("held lease refuses "+string(d), func(t *testing.T) {
			g := groupPath(t, "sem")
			id := "k-" + string(d)
			kz.send("hold semaphore:1 " + g + " " + id)
			kz.expect("acq "+id, step)
			refusedBeside(t, s, g, d, "Kazoo Semaphore")
			children, _, err := raw.Children(g)
			if err != nil {
				t.Fatal(err)
			}
			if len(children) != 1 {
				t.Fatalf("children of %s after the refusal: %v; want the lease alone", g, children)
			}
			kz.send("release " + id)
			kz.expect("released "+id, step)
		})
	}

	// A Kazoo Semaphore lists its path and creates its lease after, so a
	// lease can appear beside a herald owner that joined in between (here
	// made certain with two leases, which Kazoo grants beside one child).
	t.Run("lease beside an owner steps it down", func(t *testing.T) {
		g := groupPath(t, "sem")
		h := guardedOwner(t, s, g)
		kz.send("hold semaphore:2 " + g + " k2")
		kz.expect("acq k2", step)
		steppedDown(t, h, g, "Kazoo Semaphore")
		kz.send("release k2")
		kz.expect("released k2", step)
	})

	// An owner that does not guard keeps owning; observers say so.
	t.Run("observers tell a lease beside an owner", func(t *testing.T) {
		g := groupPath(t, "sem")
		h := ownUnguarded(t, s, g)
		kz.send("hold semaphore:2 " + g + " k4")
		kz.expect("acq k4", step)
		observedBeside(t, s, g, h, "Kazoo Semaphore")
		kz.send("release k4")
		kz.expect("released k4", step)
	})

	// The other order is safe already: the semaphore counts herald's node.
	t.Run("semaphore waits behind an owner", func(t *testing.T) {
		g := groupPath(t, "sem")
		h := guardedOwner(t, s, g)
		kz.send("hold semaphore:1 " + g + " k3")
		kz.expect("queued k3", step)
		hold := time.After(2 * time.Second)
		for done := false; !done; {
			select {
			case <-hold:
				done = true
			case <-h.Done():
				t.Fatalf("herald Lock lost %s while Kazoo's Semaphore waited: %s %v", g, h.Reason(), h.Err())
			}
		}
		resigned := time.Now().UnixNano()
		if err := h.Resign(ctxFor(t, step)); err != nil {
			t.Fatal(err)
		}
		if at, _ := strconv.ParseInt(kz.expect("acq k3", step)[0], 10, 64); at < resigned {
			t.Fatalf("Kazoo's Semaphore acquired %s at %d, before herald's owner resigned at %d: two owners", g, at, resigned)
		}
		kz.send("release k3")
		kz.expect("released k3", step)
	})
}
