package elect_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
)

// TestNeverOwnBesideAnEphemeralLockNode: the simplest lock another client
// can write is one ephemeral node without a sequence in the path it
// guards (create -e GROUP/lock; a Kazoo Semaphore's lease is one too).
// Its holder owns outside the queue, where herald used to read the node
// as clutter and own beside it: a waiter now refuses such a group, an
// owner steps down when one appears, and observers report it. A
// persistent node without a sequence (a note, a subgroup) is clutter
// still, and the group takes its owner as before.
func TestNeverOwnBesideAnEphemeralLockNode(t *testing.T) {
	s := session(t, sharedAddrs(t))
	other := session(t, sharedAddrs(t)) // the other client: a session of its own
	open := zk.WorldACL(zk.PermAll)
	// own takes a lock on a new group, which it creates.
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
	put := func(t *testing.T, p string, flags int32) {
		if _, err := other.Conn().Create(p, []byte("held"), flags, open); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("a waiter refuses", func(t *testing.T) {
		l, h := own(t)
		if err := h.Resign(ctxT(t, 20*time.Second)); err != nil {
			t.Fatal(err)
		}
		put(t, l.Path()+"/lock", zk.FlagEphemeral)
		h, err := l.AcquireTimeout(ctxT(t, 20*time.Second), 3*time.Second)
		if err == nil {
			_ = h.Resign(ctxT(t, 20*time.Second))
			t.Fatalf("acquired %s while another session holds its ephemeral node lock: two owners", l.Path())
		}
		if !errors.Is(err, elect.ErrUnsafeGroup) || !strings.Contains(err.Error(), "lock") {
			t.Fatalf("Acquire beside an ephemeral lock node: %v; want ErrUnsafeGroup naming the node", err)
		}
	})

	t.Run("an owner steps down and observers tell", func(t *testing.T) {
		l, h := own(t, elect.WatchForHazards())
		_, kept := own(t, elect.NoHazardCheck())
		put(t, l.Path()+"/lock", zk.FlagEphemeral)
		put(t, kept.Group()+"/lock", zk.FlagEphemeral)
		select {
		case <-h.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("the owner of %s still holds 10s after another session created its ephemeral node lock: two owners", l.Path())
		}
		if h.Reason() != elect.ReasonTwoOwners {
			t.Fatalf("stepped down with reason %q (%v); want %q", h.Reason(), h.Err(), elect.ReasonTwoOwners)
		}
		v, err := elect.ReadGroup(ctxT(t, 20*time.Second), s, kept.Group())
		if err != nil {
			t.Fatal(err)
		}
		if v.Owner == nil || v.Owner.Node != kept.Node() || !strings.Contains(v.Hazard, "lock") {
			t.Fatalf("view of %s, its unguarded owner beside an ephemeral lock node: owner %v, hazard %q; want that owner and the hazard", kept.Group(), v.Owner, v.Hazard)
		}
	})

	t.Run("a persistent node is clutter", func(t *testing.T) {
		l, h := own(t, elect.WatchForHazards())
		put(t, l.Path()+"/notes", 0)
		waiter := session(t, sharedAddrs(t))
		wl, err := elect.NewLock(waiter, l.Path())
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			wh, err := wl.Acquire(ctxT(t, 20*time.Second))
			if err == nil {
				err = wh.Resign(ctxT(t, 20*time.Second))
			}
			got <- err
		}()
		eventually(t, 10*time.Second, "the waiter queued beside the persistent node", func() bool {
			c, _, err := s.Conn().Children(l.Path())
			return err == nil && len(c) == 3
		})
		select {
		case <-h.Done():
			t.Fatalf("the owner of %s let go beside a persistent node: %s %v", l.Path(), h.Reason(), h.Err())
		case err := <-got:
			t.Fatalf("the waiter ended before the owner released: %v", err)
		case <-time.After(2 * time.Second):
		}
		if err := h.Resign(ctxT(t, 20*time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("the waiter behind the owner, beside a persistent node: %v; want it to own", err)
		}
		v, err := elect.ReadGroup(ctxT(t, 20*time.Second), s, l.Path())
		if err != nil || v.Hazard != "" {
			t.Fatalf("view of %s with a persistent node: hazard %q, %v; want none", l.Path(), v.Hazard, err)
		}
	})
}

// TestOwnerStepsDownForALockNodeMadeAgain: a name without a sequence comes
// back: a client that locks by creating GROUP/lock makes the same name on
// each take. An owner's guard that read such a node once as no client's (a
// persistent one, or one already gone) remembered the name as inert and
// passed over it from then on, so the ephemeral node made again under that
// name held beside the owner, which never stepped down.
func TestOwnerStepsDownForALockNodeMadeAgain(t *testing.T) {
	addrs := sharedAddrs(t)
	p := proxyTo(t, addrs[0])
	s := session(t, []string{p.Addr()})
	other := session(t, addrs)
	open := zk.WorldACL(zk.PermAll)
	l, err := elect.NewLock(s, groupPath(t), elect.CreateParents(), elect.WatchForHazards())
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	lock := l.Path() + "/lock"
	if _, err := other.Conn().Create(lock, nil, 0, open); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the owner's guard read the persistent node", func() bool {
		return p.Requests(faultproxy.OpExists, lock) > 0
	})
	if err := other.Conn().Delete(lock, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Conn().Create(lock, []byte("held"), zk.FlagEphemeral, open); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("the owner of %s still holds 10s after another session made its ephemeral node lock again: two owners", l.Path())
	}
	if h.Reason() != elect.ReasonTwoOwners {
		t.Fatalf("stepped down with reason %q (%v); want %q", h.Reason(), h.Err(), elect.ReasonTwoOwners)
	}
}

// TestObserverSeesALockNodeMadeAgain: an observer that read a listed
// GROUP/lock already gone remembered it as no client's while the name
// stayed listed, so the same name made again (a client that locks by
// creating it takes it again) held beside herald's owner unreported.
func TestObserverSeesALockNodeMadeAgain(t *testing.T) {
	addrs := sharedAddrs(t)
	p := proxyTo(t, addrs[0])
	s := session(t, addrs)
	watcher := session(t, []string{p.Addr()})
	other := session(t, addrs)
	open := zk.WorldACL(zk.PermAll)
	l, err := elect.NewLock(s, groupPath(t), elect.CreateParents(), elect.NoHazardCheck())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 60*time.Second)
	o, err := elect.Observe(ctx, watcher, l.Path())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range o.Changes() {
		}
	}()
	eventually(t, 10*time.Second, "the observer's first view", func() bool { _, ok := o.Last(); return ok })
	lock := l.Path() + "/lock"
	t.Cleanup(p.Release)
	// The observer lists the node, and reads it only once it is gone: its
	// listing's reply is held meanwhile. A listing held that did not show
	// it (one the observer made for another reason) reads nothing: again.
	for try := 0; p.Requests(faultproxy.OpExists, lock) == 0; try++ {
		if try == 5 {
			t.Fatal("the observer never read the node it listed")
		}
		held := p.HoldReplyTo(faultproxy.OpGetChildren2)
		if _, err := other.Conn().Create(lock, nil, zk.FlagEphemeral, open); err != nil {
			t.Fatal(err)
		}
		select {
		case <-held:
		case <-time.After(10 * time.Second):
			t.Fatal("the observer never listed the group after the node came")
		}
		if err := other.Conn().Delete(lock, -1); err != nil {
			t.Fatal(err)
		}
		p.Release()
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && p.Requests(faultproxy.OpExists, lock) == 0; {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if _, err := other.Conn().Create(lock, []byte("held"), zk.FlagEphemeral, open); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the observer reports the node made again beside the owner", func() bool {
		v, ok := o.Last()
		return ok && strings.Contains(v.Hazard, "lock")
	})
}

// TestObserverSeesAnOutsideHolderBesideANodeMadeByHand: a node named like
// a client that cannot read herald's, which no session holds (made by
// hand), is ruled out of the hazard; the observer then said no hazard at
// all, and never looked for a holder outside the queue beside the owner.
func TestObserverSeesAnOutsideHolderBesideANodeMadeByHand(t *testing.T) {
	s := session(t, sharedAddrs(t))
	other := session(t, sharedAddrs(t))
	open := zk.WorldACL(zk.PermAll)
	l, err := elect.NewLock(s, groupPath(t), elect.CreateParents(), elect.NoHazardCheck())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Conn().Create(l.Path()+"/byhand__lock__", nil, zk.FlagSequence, open); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Conn().Create(l.Path()+"/lock", []byte("held"), zk.FlagEphemeral, open); err != nil {
		t.Fatal(err)
	}
	v, err := elect.ReadGroup(ctxT(t, 20*time.Second), s, l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if v.HazardNode != "lock" {
		t.Fatalf("view of %s, its owner beside an ephemeral lock node and a node made by hand: hazard %q on %q; want the lock node's", l.Path(), v.Hazard, v.HazardNode)
	}
}

// TestObserverSeesAPersistentNodeMadeEphemeral: a persistent GROUP/lock is
// clutter, and the observer remembered it as no client's while its name
// stayed listed. Deleted and made again as an ephemeral node of the same
// name between two listings (here in one multi), the name never left a
// listing, so the holder beside herald's owner went unreported while
// the owner's guard, which reads such a name at each listing, stepped
// down. Both observers share the reader: Observe and ObserveMany.
func TestObserverSeesAPersistentNodeMadeEphemeral(t *testing.T) {
	for _, many := range []bool{false, true} {
		t.Run(map[bool]string{false: "Observe", true: "ObserveMany"}[many], func(t *testing.T) {
			addrs := sharedAddrs(t)
			s, watcher, other := session(t, addrs), session(t, addrs), session(t, addrs)
			open := zk.WorldACL(zk.PermAll)
			l, err := elect.NewLock(s, groupPath(t), elect.CreateParents(), elect.NoHazardCheck())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Acquire(ctxT(t, 20*time.Second)); err != nil {
				t.Fatal(err)
			}
			lock := l.Path() + "/lock"
			if _, err := other.Conn().Create(lock, nil, 0, open); err != nil {
				t.Fatal(err)
			}
			last := observeLast(t, watcher, l.Path(), many)
			eventually(t, 10*time.Second, "the observer's first view", func() bool { _, ok := last(); return ok })
			if v, _ := last(); v.Owner == nil || v.Hazard != "" {
				t.Fatalf("view of %s beside a persistent lock node: owner %v, hazard %q; want herald's owner, no hazard", l.Path(), v.Owner, v.Hazard)
			}
			if _, err := other.Conn().Multi(&zk.DeleteRequest{Path: lock, Version: -1},
				&zk.CreateRequest{Path: lock, Data: []byte("held"), Acl: open, Flags: zk.FlagEphemeral}); err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, "the observer reports the ephemeral lock node beside the owner", func() bool {
				v, ok := last()
				return ok && v.HazardNode == "lock"
			})
		})
	}
}

// TestObserverSeesAQueueNodeMadeAgainEphemeral: a node with a sequence
// in its name made by hand, persistent, is no participant's; deleted and
// made again under the same name as an ephemeral node (in one multi, so
// the name never leaves the listing), it is the group's lowest node a
// session holds, and the observer says so.
func TestObserverSeesAQueueNodeMadeAgainEphemeral(t *testing.T) {
	for _, many := range []bool{false, true} {
		t.Run(map[bool]string{false: "Observe", true: "ObserveMany"}[many], func(t *testing.T) {
			addrs := sharedAddrs(t)
			watcher, other := session(t, addrs), session(t, addrs)
			open := zk.WorldACL(zk.PermAll)
			group := groupPath(t)
			node := group + "/lock-0000000007"
			mkdirs(t, other.Conn(), group)
			if _, err := other.Conn().Create(node, nil, 0, open); err != nil {
				t.Fatal(err)
			}
			last := observeLast(t, watcher, group, many)
			eventually(t, 10*time.Second, "the observer's first view", func() bool { _, ok := last(); return ok })
			if v, _ := last(); v.Owner != nil || len(v.Queue) != 1 || v.Queue[0].Suspect == "" {
				t.Fatalf("view of %s holding a persistent queue node: owner %v, queue %+v; want no owner and the node suspect", group, v.Owner, v.Queue)
			}
			if _, err := other.Conn().Multi(&zk.DeleteRequest{Path: node, Version: -1},
				&zk.CreateRequest{Path: node, Acl: open, Flags: zk.FlagEphemeral}); err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, "the observer reports the ephemeral node made in its place as the owner", func() bool {
				v, ok := last()
				return ok && v.Owner != nil && v.Owner.Node == "lock-0000000007" && v.Owner.Session == other.ID()
			})
		})
	}
}

// observeLast observes group with an Observer, or a Many of it alone,
// and returns its last view.
func observeLast(t *testing.T, s *elect.Session, group string, many bool) func() (elect.View, bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if many {
		m, err := elect.ObserveMany(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); <-m.Done() })
		if err := m.Add(group); err != nil {
			t.Fatal(err)
		}
		go func() {
			for range m.Changes() {
			}
		}()
		return func() (elect.View, bool) { return m.Last(group) }
	}
	o, err := elect.Observe(ctx, s, group)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); o.Wait() })
	go func() {
		for range o.Changes() {
		}
	}()
	return o.Last
}
