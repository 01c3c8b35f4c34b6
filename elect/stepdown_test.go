package elect_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// An owner steps down when a client joins that cannot read its node (Kazoo
// beside herald's default lock names, which then owns as if herald were
// not there): at once under WatchForHazards, within about
// DefaultHazardCheck by default. Its next Acquire queues in the
// newcomer's dialect, behind it. Under NoHazardCheck the owner keeps
// holding: that is the difference the check makes.
func TestStepDownForBlindJoiner(t *testing.T) {
	ctx := ctxT(t, 60*time.Second)
	look := session(t, sharedAddrs(t))
	lock := func(opts ...elect.Option) (*elect.Lock, *elect.Session, *elect.Handle) {
		s := session(t, sharedAddrs(t))
		l, err := elect.NewLock(s, groupPath(t), append([]elect.Option{elect.CreateParents()}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return l, s, h
	}
	l, s, h := lock(elect.WatchForHazards())
	_, _, polled := lock()
	_, _, kept := lock(elect.NoHazardCheck())
	group := l.Path()
	// A Kazoo Lock joins each group: it sees only "__lock__" names.
	kazooBase := "9f8e7d6c5b4a39281706f5e4d3c2b1a0__lock__"
	joined := time.Now()
	kz, kc := foreign(t, group, kazooBase)
	foreign(t, polled.Group(), kazooBase)
	foreign(t, kept.Group(), kazooBase)
	select {
	case <-h.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("the owner still holds 5s after %s joined, which cannot read its node %s", kz, h.Node())
	}
	if h.Reason() != elect.ReasonTwoOwners || !errors.Is(h.Err(), elect.ErrUnsafeGroup) || !strings.Contains(h.Err().Error(), "Kazoo") || !strings.Contains(h.Err().Error(), "--dialect kazoo") {
		t.Fatalf("stepped down with reason %q, err %v; want %q and ErrUnsafeGroup naming Kazoo and the dialect", h.Reason(), h.Err(), elect.ReasonTwoOwners)
	}
	eventually(t, 5*time.Second, "the stepped-down owner's node gone", func() bool {
		ok, _, err := look.Conn().Exists(h.NodePath())
		return err == nil && !ok
	})
	select {
	case <-polled.Done():
		if polled.Reason() != elect.ReasonTwoOwners {
			t.Fatalf("the owner with the default check ended with %q (%v) after %v; want %q", polled.Reason(), polled.Err(), time.Since(joined), elect.ReasonTwoOwners)
		}
	case <-time.After(elect.DefaultHazardCheck + 3*time.Second):
		t.Fatalf("the owner with the default check still holds %v after a Kazoo node joined", time.Since(joined))
	}
	if !kept.Held() {
		t.Fatalf("an owner under NoHazardCheck lost the lock: %s, %v", kept.Reason(), kept.Err())
	}
	// The next Acquire writes a name Kazoo reads and waits behind its node.
	got := make(chan *elect.Handle, 1)
	go func() {
		h2, err := l.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- h2
	}()
	node := queued(t, look, group, s)
	if !strings.Contains(node, "__lock__") {
		t.Fatalf("after stepping down, our node is %s; want Kazoo's dialect, which the newcomer reads", node)
	}
	select {
	case h2 := <-got:
		t.Fatalf("owned %s while the Kazoo node %s is below it", h2.Node(), kz)
	case <-time.After(300 * time.Millisecond):
	}
	if err := kc.Delete(group+"/"+kz, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	select {
	case h2 := <-got:
		if h2 == nil || !h2.Held() {
			t.Fatal("no ownership after the Kazoo node left")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not owner 5s after the Kazoo node left")
	}
}

// A node named like a client that cannot read the owner's node but held by
// no session (someone created it by hand) is no such client: the owner
// keeps holding. A real client of that kind joining afterwards still makes
// it step down.
func TestNoStepDownForANodeNoSessionHolds(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	s := session(t, sharedAddrs(t))
	l, err := elect.NewLock(s, groupPath(t), elect.CreateParents(), elect.WatchForHazards())
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	group := l.Path()
	kazooBase := "9f8e7d6c5b4a39281706f5e4d3c2b1a0__lock__"
	if _, err := s.Conn().Create(group+"/"+kazooBase, nil, zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Done():
		t.Fatalf("stepped down for a persistent node: %s, %v", h.Reason(), h.Err())
	case <-time.After(time.Second):
	}
	foreign(t, group, kazooBase)
	select {
	case <-h.Done():
		if h.Reason() != elect.ReasonTwoOwners {
			t.Fatalf("ended with %q (%v), want %q", h.Reason(), h.Err(), elect.ReasonTwoOwners)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still holds 5s after a Kazoo client joined that cannot read its node")
	}
}

// An owner that steps down says why where observers read it: an
// election's in the office, a lock's (which keeps no office) in the
// group's mark, written so that it is not taken for a release. Observers
// report the handover to the newcomer with ReasonTwoOwners: a Curator
// mutex node beside herald's default election names (Curator sorts them
// behind its own), a Kazoo node beside its default lock names (Kazoo does
// not see them).
func TestStepDownReasonObserved(t *testing.T) {
	for _, c := range []struct {
		recipe  elect.Recipe
		joiner  string
		acquire func(ctx context.Context, s *elect.Session, group string) (*elect.Handle, error)
	}{
		{elect.RecipeElection, "_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-lock-", func(ctx context.Context, s *elect.Session, group string) (*elect.Handle, error) {
			e, err := elect.NewElection(s, group, elect.CreateParents(), elect.WatchForHazards())
			if err != nil {
				return nil, err
			}
			return e.Campaign(ctx, "alpha")
		}},
		{elect.RecipeLock, "9f8e7d6c5b4a39281706f5e4d3c2b1a0__lock__", func(ctx context.Context, s *elect.Session, group string) (*elect.Handle, error) {
			l, err := elect.NewLock(s, group, elect.CreateParents(), elect.WatchForHazards(), elect.WithID("alpha"))
			if err != nil {
				return nil, err
			}
			return l.Acquire(ctx)
		}},
	} {
		t.Run(string(c.recipe), func(t *testing.T) {
			ctx := ctxT(t, 60*time.Second)
			group := groupPath(t)
			h, err := c.acquire(ctx, session(t, sharedAddrs(t)), group)
			if err != nil {
				t.Fatal(err)
			}
			o := observe(t, session(t, sharedAddrs(t)), group)
			expect(t, o, elect.Snapshot, ownerIs("alpha"))
			joiner, _ := foreign(t, group, c.joiner)
			for {
				ch := next(t, o)
				if ch.Kind != elect.OwnerChanged {
					continue
				}
				if ch.Owner == nil || ch.Owner.Node != joiner || ch.Previous == nil || ch.Previous.ID != "alpha" || ch.Reason != elect.ReasonTwoOwners {
					t.Fatalf("handover %+v: want alpha -> %s, reason %q", ch, joiner, elect.ReasonTwoOwners)
				}
				break
			}
			if h.Held() || h.Reason() != elect.ReasonTwoOwners {
				t.Fatalf("alpha: held %v, reason %q; want stepped down", h.Held(), h.Reason())
			}
		})
	}
}

// A client of a recipe herald never shares a group with (here Curator's
// read-write lock, which sorts by the text after "__READ__" or "__WRIT__")
// cannot read any name of herald's: the owner steps down and says to give
// it a group of its own, and a new Acquire is refused.
func TestStepDownForAnUnsharableRecipe(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	l, err := elect.NewLock(session(t, sharedAddrs(t)), groupPath(t), elect.CreateParents(), elect.WatchForHazards())
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	foreign(t, l.Path(), "_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-__READ__")
	select {
	case <-h.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the owner still holds 5s after a Curator read lock joined")
	}
	if h.Reason() != elect.ReasonTwoOwners || !strings.Contains(h.Err().Error(), "group of its own") {
		t.Fatalf("stepped down with %q, %v; want %q saying to give the reader a group of its own", h.Reason(), h.Err(), elect.ReasonTwoOwners)
	}
	if _, err := l.Acquire(ctx); !errors.Is(err, elect.ErrUnsafeGroup) {
		t.Fatalf("Acquire beside the read lock: %v; want ErrUnsafeGroup", err)
	}
}

// HazardCheckAfter refuses a delay it cannot honour, saying the range.
func TestHazardCheckAfterRange(t *testing.T) {
	s := session(t, sharedAddrs(t))
	for _, d := range []time.Duration{-time.Second, 2 * time.Hour} {
		if _, err := elect.NewLock(s, groupPath(t), elect.HazardCheckAfter(d)); err == nil || !strings.Contains(err.Error(), "0 to 1h") {
			t.Errorf("HazardCheckAfter(%v): %v; want an error giving the range", d, err)
		}
	}
	if _, err := elect.NewLock(s, groupPath(t), elect.HazardCheckAfter(0)); err != nil {
		t.Errorf("HazardCheckAfter(0): %v", err)
	}
}

// Once an owner guards its group (here 100ms into its tenure), a client
// that cannot read its node is seen as it joins: the children watch fires
// and one listing follows (about 10ms here; the bound is for slow
// machines).
func TestGuardSeesALaterJoinerAtOnce(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	l, err := elect.NewLock(session(t, sharedAddrs(t)), groupPath(t), elect.CreateParents(), elect.HazardCheckAfter(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // guarding by now, and nobody else there
	if !h.Held() {
		t.Fatalf("lost the lock alone in its group: %s, %v", h.Reason(), h.Err())
	}
	joined := time.Now()
	foreign(t, l.Path(), "9f8e7d6c5b4a39281706f5e4d3c2b1a0__lock__")
	select {
	case <-h.Done():
		if h.Reason() != elect.ReasonTwoOwners {
			t.Fatalf("ended with %q, %v; want %q", h.Reason(), h.Err(), elect.ReasonTwoOwners)
		}
		t.Logf("stepped down %v after the Kazoo node joined", time.Since(joined))
	case <-time.After(time.Second):
		t.Fatal("a guarding owner still holds 1s after a Kazoo node joined")
	}
}

// Guarded closes once a guarding owner has listed its group and found it
// safe; under NoHazardCheck it never does.
func TestGuarded(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	take := func(opts ...elect.Option) *elect.Handle {
		l, err := elect.NewLock(session(t, sharedAddrs(t)), groupPath(t), append([]elect.Option{elect.CreateParents()}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	watching, off := take(elect.WatchForHazards()), take(elect.NoHazardCheck())
	select {
	case <-watching.Guarded():
	case <-time.After(5 * time.Second):
		t.Fatal("a WatchForHazards owner alone in its group is not Guarded after 5s")
	}
	select {
	case <-off.Guarded():
		t.Fatal("a NoHazardCheck owner says it is Guarded")
	case <-time.After(300 * time.Millisecond):
	}
}

// ZooKeeper sends a watch event only to a session that may READ the node:
// once the owner's node stops letting the waiter read it, its release is
// never heard through the watch. The waiter's rechecks hear it (a read
// answering NoNode), so it owns rather than waiting forever; with the
// rechecks out of the way it does not own, which shows the event is gone.
func TestWaiterHearsTheReleaseOfANodeItMayNotRead(t *testing.T) {
	for _, recheck := range []bool{false, true} {
		t.Run(map[bool]string{false: "no recheck", true: "recheck"}[recheck], func(t *testing.T) {
			every := time.Hour
			if recheck {
				every = 200 * time.Millisecond
			}
			defer elect.SetRecheckEvery(every)()
			addrs := sharedAddrs(t)
			path := groupPath(t)
			a, b, admin := session(t, addrs), session(t, addrs), session(t, addrs)
			ctx := ctxT(t, 20*time.Second)
			la, _ := elect.NewLock(a, path, elect.CreateParents())
			lb, _ := elect.NewLock(b, path)
			ha, err := la.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			go func() {
				h, err := lb.Acquire(ctx)
				if err == nil && !h.Held() {
					err = errors.New("acquired a handle that is not held")
				}
				got <- err
			}()
			waitQueueLen(t, admin, path, 2)
			time.Sleep(100 * time.Millisecond) // b's watch is set on a's node
			noRead := zk.WorldACL(zk.PermWrite | zk.PermCreate | zk.PermDelete | zk.PermAdmin)
			if _, err := admin.Conn().SetACL(ha.NodePath(), noRead, -1); err != nil {
				t.Fatal(err)
			}
			if err := ha.Release(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-got:
				if !recheck {
					t.Fatalf("b acquired (%v) without a recheck: ZooKeeper did send the event", err)
				}
				if err != nil {
					t.Fatalf("b: %v", err)
				}
			case <-time.After(2 * time.Second):
				if recheck {
					t.Fatal("b still waits 2s after the release it may not read")
				}
			}
		})
	}
}

// The owner hears the same way of its own node's deletion by someone who
// first took READ away from it: it gives ownership up (ReasonDeleted)
// rather than holding beside the next owner.
func TestOwnerHearsTheDeletionOfANodeItMayNotRead(t *testing.T) {
	defer elect.SetRecheckEvery(200 * time.Millisecond)()
	addrs := sharedAddrs(t)
	path := groupPath(t)
	a, admin := session(t, addrs), session(t, addrs)
	ctx := ctxT(t, 20*time.Second)
	la, _ := elect.NewLock(a, path, elect.CreateParents())
	ha, err := la.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the owner's watch is set on its node
	noRead := zk.WorldACL(zk.PermWrite | zk.PermCreate | zk.PermDelete | zk.PermAdmin)
	if _, err := admin.Conn().SetACL(ha.NodePath(), noRead, -1); err != nil {
		t.Fatal(err)
	}
	if err := admin.Conn().Delete(ha.NodePath(), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ha.Done():
		if r := ha.Reason(); r != elect.ReasonDeleted {
			t.Fatalf("ownership ended for %v, want %v", r, elect.ReasonDeleted)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the owner still holds 3s after its node was deleted")
	}
}
