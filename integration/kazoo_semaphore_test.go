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
			l, err := elect.NewLock(s, g, elect.WithDialect(d))
			if err != nil {
				t.Fatal(err)
			}
			h, err := l.AcquireTimeout(ctxFor(t, step), 5*time.Second)
			if err == nil {
				_ = h.Resign(ctxFor(t, step))
				t.Fatalf("herald Lock acquired %s while Kazoo's Semaphore holds its only lease there: two owners", g)
			}
			if !errors.Is(err, elect.ErrUnsafeGroup) || !strings.Contains(err.Error(), "Kazoo Semaphore") {
				t.Fatalf("Acquire beside a held Kazoo Semaphore: %v; want ErrUnsafeGroup naming the Kazoo Semaphore", err)
			}
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
		l, err := elect.NewLock(s, g, elect.CreateParents(), elect.WatchForHazards())
		if err != nil {
			t.Fatal(err)
		}
		h, err := l.Acquire(ctxFor(t, step))
		if err != nil {
			t.Fatal(err)
		}
		kz.send("hold semaphore:2 " + g + " k2")
		kz.expect("acq k2", step)
		select {
		case <-h.Done():
		case <-time.After(step):
			t.Fatalf("herald Lock still owns %s %v after Kazoo's Semaphore took a lease there: two owners", g, step)
		}
		if h.Reason() != elect.ReasonTwoOwners {
			t.Fatalf("owner ended with %q (%v); want %q", h.Reason(), h.Err(), elect.ReasonTwoOwners)
		}
		kz.send("release k2")
		kz.expect("released k2", step)
	})

	// An owner that does not guard keeps owning; observers say so.
	t.Run("observers tell a lease beside an owner", func(t *testing.T) {
		g := groupPath(t, "sem")
		h := ownUnguarded(t, s, g)
		kz.send("hold semaphore:2 " + g + " k4")
		kz.expect("acq k4", step)
		v, err := elect.ReadGroup(ctxFor(t, step), s, g)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(v.Hazard, "Kazoo Semaphore") || v.Owner == nil || v.Owner.Node != h.Node() {
			t.Fatalf("view of %s with herald's owner %s beside a Kazoo lease: owner %v, hazard %q; want that owner and a hazard naming the Kazoo Semaphore", g, h.Node(), v.Owner, v.Hazard)
		}
		kz.send("release k4")
		kz.expect("released k4", step)
	})

	// The other order is safe already: the semaphore counts herald's node.
	t.Run("semaphore waits behind an owner", func(t *testing.T) {
		g := groupPath(t, "sem")
		l, err := elect.NewLock(s, g, elect.CreateParents(), elect.WatchForHazards())
		if err != nil {
			t.Fatal(err)
		}
		h, err := l.Acquire(ctxFor(t, step))
		if err != nil {
			t.Fatal(err)
		}
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
