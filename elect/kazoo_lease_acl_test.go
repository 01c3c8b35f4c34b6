package elect_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestUnreadableKazooLeaseHolds: a Kazoo client with a default ACL of its
// own (digest, SASL) writes its NonBlockingLease's lease_holder so that
// herald's identity may not READ it. herald read the node's data to learn
// the lease's end, and a read refused is no answer: a waiter failed with
// a bare "not authenticated", an owner's guard gave up its listing and
// kept owning beside the lease (watching nothing until its next recheck,
// where it failed again), and an observer could not read the group at
// all, where it had read the node as clutter before. A lease whose end
// herald may not read may be running: it holds, as one that runs.
func TestUnreadableKazooLeaseHolds(t *testing.T) {
	s := session(t, sharedAddrs(t))
	kazoo := session(t, sharedAddrs(t)) // the lease's writer: a session of its own
	own := func(t *testing.T, opts ...elect.Option) (*elect.Lock, *elect.Handle) {
		l, err := elect.NewLock(s, groupPath(t), append([]elect.Option{elect.CreateParents()}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		h, err := l.Acquire(ctxT(t, 20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return l, h
	}
	// lease writes a running lease as Kazoo does, readable by its own
	// identity alone.
	lease := func(t *testing.T, group string) {
		end := time.Now().UTC().Add(time.Minute).Format("2006-01-02T15:04:05")
		rec := `{"version": 1, "holder": "k1", "end": "` + end + `"}`
		if _, err := kazoo.Conn().Create(group+"/lease_holder", []byte(rec), 0, zk.DigestACL(zk.PermAll, "kazoo", "secret")); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("a waiter refuses", func(t *testing.T) {
		l, h := own(t)
		if err := h.Resign(ctxT(t, 20*time.Second)); err != nil {
			t.Fatal(err)
		}
		lease(t, l.Path())
		h, err := l.AcquireTimeout(ctxT(t, 20*time.Second), 3*time.Second)
		if err == nil {
			_ = h.Resign(ctxT(t, 20*time.Second))
			t.Fatalf("acquired %s beside a Kazoo lease it may not read: two owners possible", l.Path())
		}
		if !errors.Is(err, elect.ErrUnsafeGroup) || !strings.Contains(err.Error(), "NonBlockingLease") || !strings.Contains(err.Error(), "READ") {
			t.Fatalf("Acquire beside an unreadable Kazoo lease: %v; want ErrUnsafeGroup naming the NonBlockingLease and the READ it lacks", err)
		}
		// A lease_holder left by a Kazoo client retired since, or another
		// tool's node of that name, refuses the group for good: the
		// error names the ways out, not only another path.
		if !strings.Contains(err.Error(), "grant") || !strings.Contains(err.Error(), "delete it once no NonBlockingLease uses") {
			t.Fatalf("Acquire beside an unreadable Kazoo lease: %v; want it to say READ may be granted, or the node deleted once no lease uses the path", err)
		}
	})

	t.Run("an owner steps down", func(t *testing.T) {
		l, h := own(t, elect.WatchForHazards())
		lease(t, l.Path())
		select {
		case <-h.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("the owner of %s still holds 10s after a Kazoo lease it may not read appeared there: two owners possible", l.Path())
		}
		if h.Reason() != elect.ReasonTwoOwners {
			t.Fatalf("stepped down with reason %q (%v); want %q", h.Reason(), h.Err(), elect.ReasonTwoOwners)
		}
	})

	t.Run("observers tell", func(t *testing.T) {
		_, kept := own(t, elect.NoHazardCheck())
		lease(t, kept.Group())
		v, err := elect.ReadGroup(ctxT(t, 20*time.Second), s, kept.Group())
		if err != nil {
			t.Fatalf("ReadGroup of %s beside a Kazoo lease it may not read: %v; want a view naming the hazard", kept.Group(), err)
		}
		if v.Owner == nil || v.Owner.Node != kept.Node() || !strings.Contains(v.Hazard, "NonBlockingLease") {
			t.Fatalf("view of %s, its unguarded owner beside an unreadable Kazoo lease: owner %v, hazard %q; want that owner and the hazard", kept.Group(), v.Owner, v.Hazard)
		}
	})
}

// TestWaiterBehindAKazooLeaseLockRefuses: a Kazoo NonBlockingLease takes
// its lease under a Kazoo Lock of the same path, writes lease_holder, and
// only then deletes its lock node. A herald waiter queued behind that
// node in Kazoo's dialect, the only node below it, took its deletion for
// the handover and owned without listing: beside the lease just written,
// which its listing would have refused.
func TestWaiterBehindAKazooLeaseLockRefuses(t *testing.T) {
	s := session(t, sharedAddrs(t))
	kazoo := session(t, sharedAddrs(t))
	open := zk.WorldACL(zk.PermAll)
	l, err := elect.NewLock(s, groupPath(t), elect.CreateParents(), elect.NoHazardCheck())
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(ctxT(t, 20*time.Second)) // makes the group
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	lock, err := kazoo.Conn().Create(l.Path()+"/4f0c7d2a9b1e4c3d8e5f6a7b8c9d0e1f__lock__", nil, zk.FlagEphemeral|zk.FlagSequence, open)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		h   *elect.Handle
		err error
	}
	acq := make(chan got, 1)
	go func() {
		h, err := l.Acquire(ctxT(t, 20*time.Second))
		acq <- got{h, err}
	}()
	eventually(t, 10*time.Second, "the waiter queued behind Kazoo's lock node", func() bool {
		c, _, err := kazoo.Conn().Children(l.Path())
		return err == nil && len(c) >= 2
	})
	time.Sleep(200 * time.Millisecond) // its watch on the lock node set
	end := time.Now().UTC().Add(time.Minute).Format("2006-01-02T15:04:05")
	if _, err := kazoo.Conn().Create(l.Path()+"/lease_holder", []byte(`{"version": 1, "holder": "k1", "end": "`+end+`"}`), 0, open); err != nil {
		t.Fatal(err)
	}
	if err := kazoo.Conn().Delete(lock, -1); err != nil {
		t.Fatal(err)
	}
	r := <-acq
	if r.err == nil {
		_ = r.h.Release(ctxT(t, 20*time.Second))
		t.Fatalf("acquired %s as Kazoo's lock node went, beside the NonBlockingLease it wrote: two owners", l.Path())
	}
	if !errors.Is(r.err, elect.ErrUnsafeGroup) || !strings.Contains(r.err.Error(), "NonBlockingLease") {
		t.Fatalf("Acquire behind a Kazoo lease's lock node: %v; want ErrUnsafeGroup naming the NonBlockingLease", r.err)
	}
}
