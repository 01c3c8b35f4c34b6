package integration_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestHeraldNeverOwnsBesideAKazooLease: Kazoo's NonBlockingLease holds its
// path by a persistent lease_holder node whose data names the end of the
// lease, with no session and no place in a queue; it takes the lease under
// a Kazoo Lock, which does not see herald's node in herald's default
// dialect. herald read that node as clutter: a herald owner kept owning
// while Kazoo granted the lease beside it, and a herald Lock acquired a
// path whose lease ran.
func TestHeraldNeverOwnsBesideAKazooLease(t *testing.T) {
	const what = "NonBlockingLease"
	zkc := zktest.Shared(t)
	kz := startKazoo(t, zkc.ConnectString(), kazooSession)
	s := session(t, zkc.Addrs())
	raw := rawConn(t, zkc.Addrs(), 4*time.Second)

	// Kazoo's lock node, which a herald owner in its default dialect
	// steps down for, is gone again once the lease is written: a guard
	// that lists after that sees the lease alone. Written here as Kazoo
	// writes it, so that the owner sees nothing else.
	t.Run("lease alone beside an owner steps it down", func(t *testing.T) {
		g := groupPath(t, "lease")
		h := guardedOwner(t, s, g)
		end := time.Now().UTC().Add(time.Minute).Format("2006-01-02T15:04:05")
		rec := `{"version": 1, "holder": "k1", "end": "` + end + `"}`
		if _, err := raw.Create(g+"/lease_holder", []byte(rec), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		steppedDown(t, h, g, what)
	})

	t.Run("running lease refuses, one run out does not", func(t *testing.T) {
		g := groupPath(t, "lease")
		kz.send("lease " + g + " k2 3")
		kz.expect("leased k2", step)
		refusedBeside(t, s, g, elect.DialectAuto, what)
		time.Sleep(3*time.Second + 2*time.Second + time.Second) // the lease, herald's slack, the end cut to the second
		l, err := elect.NewLock(s, g)
		if err != nil {
			t.Fatal(err)
		}
		h, err := l.AcquireTimeout(ctxFor(t, step), 5*time.Second)
		if err != nil {
			t.Fatalf("Acquire of %s after Kazoo's lease ran out: %v", g, err)
		}
		_ = h.Release(ctxFor(t, step))
	})

	t.Run("a waiter behind the lease's lock node refuses", func(t *testing.T) {
		waiterBehindLeaseLock(t, kz, s, raw, zkc.Addrs())
	})

	t.Run("observers tell a lease beside an owner", func(t *testing.T) {
		g := groupPath(t, "lease")
		h := ownUnguarded(t, s, g)
		kz.send("lease " + g + " k3 60")
		kz.expect("leased k3", step)
		observedBeside(t, s, g, h, what)
	})
}

// waiterBehindLeaseLock: in Kazoo's dialect the lease's Kazoo Lock queues behind herald's
// owner, and a herald waiter behind that lock node: the node goes
// only once the lease is written, and the waiter, the next in line,
// owned at its deletion without listing the group.
func waiterBehindLeaseLock(t *testing.T, kz *peer, s *elect.Session, raw *zk.Conn, addrs []string) {
	g := groupPath(t, "lease")
	lo, err := elect.NewLock(s, g, elect.CreateParents(), elect.WithDialect(elect.DialectKazoo))
	if err != nil {
		t.Fatal(err)
	}
	ho, err := lo.Acquire(ctxFor(t, step))
	if err != nil {
		t.Fatal(err)
	}
	kz.send("lease " + g + " k4 60")
	queued := func(n int) func() bool {
		return func() bool { c, _, err := raw.Children(g); return err == nil && len(c) >= n }
	}
	eventually(t, step, "Kazoo's lease lock queued behind herald's owner", queued(2))
	lw, err := elect.NewLock(session(t, addrs), g)
	if err != nil {
		t.Fatal(err)
	}
	acq := make(chan error, 1)
	go func() {
		h, err := lw.Acquire(ctxFor(t, step))
		if err == nil {
			_ = h.Release(ctxFor(t, step))
		}
		acq <- err
	}()
	eventually(t, step, "the herald waiter queued behind Kazoo's lock node", queued(3))
	time.Sleep(200 * time.Millisecond) // its watch on that node set
	if err := ho.Release(ctxFor(t, step)); err != nil {
		t.Fatal(err)
	}
	kz.expect("leased k4", step)
	if err := <-acq; !errors.Is(err, elect.ErrUnsafeGroup) || !strings.Contains(err.Error(), "NonBlockingLease") {
		t.Fatalf("herald waiter behind Kazoo's lease lock on %s: Acquire gave %v; want ErrUnsafeGroup naming the NonBlockingLease (nil: two owners)", g, err)
	}
}
