package elect_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// source is what the tests read changes from: an Observer, or one group
// of a Many (under TestMany, which runs the observer tests through it).
type source interface {
	Changes() <-chan elect.Change
	Err() error
}

func observe(t *testing.T, s *elect.Session, path string, opts ...elect.ObserveOption) source {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if strings.HasPrefix(t.Name(), "TestMany/") {
		m, err := elect.ObserveMany(ctx, s, elect.Workers(4))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Add(path, opts...); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); <-m.Done() })
		return m
	}
	o, err := elect.Observe(ctx, s, path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); o.Wait() })
	return o
}

func next(t *testing.T, o source) elect.Change {
	t.Helper()
	select {
	case c, ok := <-o.Changes():
		if !ok {
			t.Fatalf("observer stopped: %v", o.Err())
		}
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no change observed within 10s")
	}
	panic("unreachable")
}

func expect(t *testing.T, o source, kind elect.ChangeKind, check func(elect.Change) error) elect.Change {
	t.Helper()
	c := next(t, o)
	if c.Kind != kind {
		t.Fatalf("got %s change %+v, want %s", c.Kind, c, kind)
	}
	if check != nil {
		if err := check(c); err != nil {
			t.Fatalf("%s change %+v: %v", kind, c, err)
		}
	}
	return c
}

func ownerIs(id string) func(elect.Change) error {
	return func(c elect.Change) error {
		if c.Owner == nil || c.Owner.ID != id {
			return fmt.Errorf("owner %v, want %s", c.Owner, id)
		}
		return nil
	}
}

func TestObserveHeraldElection(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	obs, a, b := session(t, addrs), session(t, addrs), session(t, addrs)
	ctx := ctxT(t, 30*time.Second)
	ea, _ := elect.NewElection(a, path, elect.CreateParents())
	eb, _ := elect.NewElection(b, path, elect.CreateParents())
	la, err := ea.Campaign(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	o := observe(t, obs, path)
	snap := expect(t, o, elect.Snapshot, ownerIs("alpha"))
	if snap.Owner.Czxid != la.Term() || snap.Owner.Session != a.ID() || snap.Recipe != elect.RecipeElection {
		t.Fatalf("snapshot owner %+v, want term %d session 0x%x", snap.Owner, la.Term(), a.ID())
	}
	go func() { _, _ = eb.Campaign(ctx, "beta") }()
	expect(t, o, elect.Joined, func(c elect.Change) error {
		// The observer reads no candidate's stat, and a session a name
		// claims is not proof: it is left unknown.
		if info, _ := elect.ParseName(c.Candidate.Node); c.Candidate == nil || info.Session != b.ID() || c.Candidate.Session != 0 {
			return fmt.Errorf("candidate %v, want beta's node, session not claimed from the name", c.Candidate)
		}
		return nil
	})
	if err := la.Acknowledge(ctx, "pid 42"); err != nil {
		t.Fatal(err)
	}
	ready := expect(t, o, elect.Ready, ownerIs("alpha"))
	if ready.Zxid <= snap.Zxid {
		t.Fatalf("ready zxid %d not after snapshot zxid %d", ready.Zxid, snap.Zxid)
	}
	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	ch := expect(t, o, elect.OwnerChanged, ownerIs("beta"))
	if ch.Previous == nil || ch.Previous.ID != "alpha" || ch.Reason != elect.ReasonResigned || ch.Gap {
		t.Fatalf("handover %+v: want previous alpha, reason resigned, no gap", ch)
	}
	if ch.Owner.Czxid <= la.Term() {
		t.Fatalf("new term %d not above old %d", ch.Owner.Czxid, la.Term())
	}
	_ = b.Close() // beta's session ends: no voluntary release, reason unknown
	end := expect(t, o, elect.OwnerChanged, nil)
	if end.Owner != nil || end.Previous == nil || end.Previous.ID != "beta" || end.Reason != elect.ReasonUnknown {
		t.Fatalf("end %+v: want no owner, previous beta, reason unknown", end)
	}
}

// Owners come and go within one transaction, so the observer cannot see
// them; it must say it may have missed one. Both rules are checked: nodes
// that came and went unseen (cversion), and a node that left while ahead of
// the new owner.
func TestObserveReportsGap(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, w := session(t, addrs), session(t, addrs)
	acl := zk.WorldACL(zk.PermAll)
	setup := func(nodes ...string) string {
		path := groupPath(t)
		for _, p := range []string{"/t", path} {
			if _, err := w.Conn().Create(p, nil, 0, acl); err != nil && err != zk.ErrNodeExists {
				t.Fatal(err)
			}
		}
		for _, n := range nodes {
			if _, err := w.Conn().Create(path+"/"+n, []byte(n), zk.FlagEphemeral, acl); err != nil {
				t.Fatal(err)
			}
		}
		return path
	}
	apply := func(ops ...any) {
		if _, err := w.Conn().Multi(ops...); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("CameAndWentUnseen", func(t *testing.T) {
		path := setup("n_0000000001")
		o := observe(t, obs, path)
		expect(t, o, elect.Snapshot, ownerIs("n_0000000001"))
		// b joins, owns once a is gone, and leaves; c joins.
		apply(
			&zk.CreateRequest{Path: path + "/n_0000000002", Data: []byte("b"), Acl: acl, Flags: zk.FlagEphemeral},
			&zk.DeleteRequest{Path: path + "/n_0000000001", Version: -1},
			&zk.DeleteRequest{Path: path + "/n_0000000002", Version: -1},
			&zk.CreateRequest{Path: path + "/n_0000000003", Data: []byte("c"), Acl: acl, Flags: zk.FlagEphemeral},
		)
		c := expect(t, o, elect.OwnerChanged, ownerIs("c"))
		if !c.Gap {
			t.Fatalf("b owned unseen, yet no gap: %+v", c)
		}
	})
	t.Run("LeftWhileAhead", func(t *testing.T) {
		path := setup("n_0000000001", "n_0000000002", "n_0000000003")
		o := observe(t, obs, path)
		expect(t, o, elect.Snapshot, ownerIs("n_0000000001"))
		apply(
			&zk.DeleteRequest{Path: path + "/n_0000000001", Version: -1},
			&zk.DeleteRequest{Path: path + "/n_0000000002", Version: -1},
		)
		var sawGap bool
		for i := 0; i < 2; i++ {
			c := next(t, o)
			if c.Kind == elect.OwnerChanged {
				sawGap = c.Gap
				if c.Owner == nil || c.Owner.ID != "n_0000000003" {
					t.Fatalf("owner after both left: %+v", c)
				}
				break
			}
		}
		if !sawGap {
			t.Fatal("the second node may have owned between the two deletions, yet no gap")
		}
	})
	t.Run("WholeTenureUnseenInAnEmptyGroup", func(t *testing.T) {
		path := setup()
		o := observe(t, obs, path)
		expect(t, o, elect.Snapshot, nil)
		// b comes, owns (nobody is ahead of it) and goes, all within one
		// read; the group is empty before and after.
		apply(
			&zk.CreateRequest{Path: path + "/n_0000000001", Data: []byte("b"), Acl: acl, Flags: zk.FlagEphemeral},
			&zk.DeleteRequest{Path: path + "/n_0000000001", Version: -1},
		)
		c := next(t, o)
		if c.Kind != elect.Snapshot || c.Owner != nil || !c.Gap {
			t.Fatalf("b owned unseen in an empty group: %+v; want a snapshot with no owner, marked as a gap", c)
		}
	})
	t.Run("NoGapWhenSeen", func(t *testing.T) {
		path := setup("n_0000000001", "n_0000000002")
		o := observe(t, obs, path)
		expect(t, o, elect.Snapshot, ownerIs("n_0000000001"))
		apply(&zk.DeleteRequest{Path: path + "/n_0000000001", Version: -1})
		c := expect(t, o, elect.OwnerChanged, ownerIs("n_0000000002"))
		if c.Gap {
			t.Fatalf("a plain handover was reported as a gap: %+v", c)
		}
	})
}

// After a lost connection the observer says Unknown, then sends a fresh
// snapshot once reconnected.
func TestObserveUnknownThenSnapshot(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	p := proxyTo(t, addrs[0])
	obs := session(t, []string{p.Addr()}, elect.WithSessionTimeout(6*time.Second))
	a := session(t, addrs)
	ctx := ctxT(t, 30*time.Second)
	ea, _ := elect.NewElection(a, path, elect.CreateParents())
	la, err := ea.Campaign(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	o := observe(t, obs, path)
	expect(t, o, elect.Snapshot, ownerIs("alpha"))
	// A sync the leader answers after the read is what vouches for it
	// (one every eighth of the timeout).
	time.Sleep(6*time.Second/8 + 300*time.Millisecond)
	cut := time.Now()
	p.Blackhole(true)
	expect(t, o, elect.Unknown, nil)
	// The owner changes while the observer cannot see.
	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	eb, _ := elect.NewElection(a, path)
	if _, err := eb.Campaign(ctx, "gamma"); err != nil {
		t.Fatal(err)
	}
	p.Blackhole(false)
	// alpha's end and gamma's start explain every change the group saw:
	// nobody can have owned in between.
	c := expect(t, o, elect.Snapshot, ownerIs("gamma"))
	if c.Gap {
		t.Fatalf("snapshot after the stretch: %+v; want no gap, every change is accounted for", c)
	}
	// It names alpha as the owner last seen, vouched for by the replies
	// to the requests (a sync among them) sent after the observation
	// began, before the cut.
	if c.Before == nil || c.Before.ID != "alpha" || c.BeforeHeld.Before(began) || c.BeforeHeld.After(cut) {
		t.Fatalf("snapshot after the stretch names %+v as last seen at %v; want alpha, between %v and %v", c.Before, c.BeforeHeld, began, cut)
	}
	// Now a whole tenure passes unseen: delta comes and goes.
	p.Blackhole(true)
	expect(t, o, elect.Unknown, nil)
	gamma, err := elect.ReadGroup(ctx, a, path)
	if err != nil || gamma.Owner == nil {
		t.Fatal(err)
	}
	d := session(t, addrs)
	ed, _ := elect.NewElection(d, path)
	got := make(chan *elect.Handle, 1)
	go func() {
		h, err := ed.Campaign(ctx, "delta")
		if err != nil {
			t.Errorf("delta: %v", err)
		}
		got <- h
	}()
	waitQueue(t, ed, 2)
	if err := a.Conn().Delete(path+"/"+gamma.Owner.Node, -1); err != nil {
		t.Fatal(err)
	}
	hd := <-got
	if err := hd.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	ee, _ := elect.NewElection(a, path)
	if _, err := ee.Campaign(ctx, "epsilon"); err != nil {
		t.Fatal(err)
	}
	p.Blackhole(false)
	if c := expect(t, o, elect.Snapshot, ownerIs("epsilon")); !c.Gap {
		t.Fatalf("snapshot after delta's unseen tenure: %+v; want gap", c)
	}
}

func TestObserveMissingGroupThenCreated(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	obs, a := session(t, addrs), session(t, addrs)
	ctx := ctxT(t, 30*time.Second)
	o := observe(t, obs, path)
	snap := expect(t, o, elect.Snapshot, nil)
	if snap.Owner != nil {
		t.Fatalf("missing group has owner %v", snap.Owner)
	}
	l, _ := elect.NewLock(a, path, elect.CreateParents(), elect.WithID("holder-1"))
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := expect(t, o, elect.OwnerChanged, ownerIs("holder-1"))
	if c.Recipe != elect.RecipeLock {
		t.Fatalf("recipe %q, want lock (guessed from the node names)", c.Recipe)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rel := expect(t, o, elect.OwnerChanged, nil)
	// The group is empty now; it is still a lock (its events stay
	// lock.released, not leader.lost). The release wrote herald's mark on
	// the group node in its own transaction: "released".
	if rel.Owner != nil || rel.Reason != elect.ReasonReleased || rel.Recipe != elect.RecipeLock {
		t.Fatalf("release %+v: want no owner, reason released, recipe lock", rel)
	}
}

// An owner that gives the group back because its connection was suspended
// says why, and the observer reports that reason, not a resignation or
// release. An election's owner records it in the office; a lock's cannot
// keep an office beside a lock's nodes (go-zookeeper's Lock fails on them)
// and writes it in the group's mark, twice in its transaction, which the
// observer reads instead of taking the change for a release.
func TestObserveSuspendedOwnerReason(t *testing.T) {
	for _, recipe := range []elect.Recipe{elect.RecipeElection, elect.RecipeLock} {
		t.Run(string(recipe), func(t *testing.T) {
			addrs := sharedAddrs(t)
			path := groupPath(t)
			p := proxyTo(t, addrs[0])
			holder := session(t, []string{p.Addr()}, elect.WithSessionTimeout(10*time.Second))
			obs, b := session(t, addrs), session(t, addrs)
			ctx := ctxT(t, 30*time.Second)
			la, o := alphaHoldsBetaWaits(t, ctx, holder, b, obs, path, recipe)
			p.Cut() // a blip: the session survives, but alpha's ownership does not
			select {
			case <-la.Done():
			case <-ctx.Done():
				t.Fatal("alpha kept owning through a suspended connection")
			}
			ch := expect(t, o, elect.OwnerChanged, ownerIs("beta"))
			if ch.Previous == nil || ch.Previous.ID != "alpha" || ch.Reason != elect.ReasonSuspended || ch.Recipe != recipe {
				t.Fatalf("handover %+v: want %s from alpha, reason %q", ch, recipe, elect.ReasonSuspended)
			}
			if recipe != elect.RecipeLock {
				return
			}
			// Only the queue's nodes were ever children: the lock kept no
			// office.
			children, _, err := obs.Conn().Children(path)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(children, elect.OfficeNode) {
				t.Fatalf("the lock group holds an office node: %v", children)
			}
		})
	}
}

// Someone else writing the owner's node is not a release: the observer
// reads the owner again (with a fresh data watch) and reports nothing, and
// the owner's later resign is still reported as such.
func TestObserveForeignWriteToOwnerIsNotARelease(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	obs, a, b := session(t, addrs), session(t, addrs), session(t, addrs)
	ctx := ctxT(t, 30*time.Second)
	la, o := alphaLeadsBetaWaits(t, ctx, a, b, obs, path)
	if _, err := obs.Conn().Set(path+"/"+la.Node(), []byte("alpha-renamed"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-o.Changes():
		t.Fatalf("a write to the owner's node was reported as %+v", c)
	case <-time.After(300 * time.Millisecond):
	}
	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	ch := expect(t, o, elect.OwnerChanged, ownerIs("beta"))
	if ch.Previous == nil || ch.Previous.Node != la.Node() || ch.Reason != elect.ReasonResigned {
		t.Fatalf("handover %+v: want previous %s, reason resigned", ch, la.Node())
	}
}

// alphaLeadsBetaWaits makes "alpha" (on session a) lead the election at
// path with "beta" (on b) waiting behind it, then observes it from obs
// and checks the first snapshot shows both.
func alphaLeadsBetaWaits(t *testing.T, ctx context.Context, a, b, obs *elect.Session, path string) (*elect.Handle, source) {
	t.Helper()
	return alphaHoldsBetaWaits(t, ctx, a, b, obs, path, elect.RecipeElection)
}

// alphaHoldsBetaWaits has a (as "alpha") own path as recipe and b ("beta")
// wait behind it, and returns alpha's handle and an observer from obs that
// has seen both.
func alphaHoldsBetaWaits(t *testing.T, ctx context.Context, a, b, obs *elect.Session, path string, recipe elect.Recipe) (*elect.Handle, source) {
	t.Helper()
	la, _, o := alphaHoldsBetaWaitsFor(t, ctx, a, b, obs, path, recipe)
	return la, o
}

// alphaHoldsBetaWaitsFor is alphaHoldsBetaWaits that also gives beta's
// handle, on the channel, once beta owns.
func alphaHoldsBetaWaitsFor(t *testing.T, ctx context.Context, a, b, obs *elect.Session, path string, recipe elect.Recipe) (*elect.Handle, <-chan *elect.Handle, source) {
	t.Helper()
	own := func(s *elect.Session, id string, opts ...elect.Option) (*elect.Handle, error) {
		if recipe == elect.RecipeLock {
			l, err := elect.NewLock(s, path, append(opts, elect.WithID(id))...)
			if err != nil {
				return nil, err
			}
			return l.Acquire(ctx)
		}
		e, err := elect.NewElection(s, path, opts...)
		if err != nil {
			return nil, err
		}
		return e.Campaign(ctx, id)
	}
	la, err := own(a, "alpha", elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	beta := make(chan *elect.Handle, 1)
	go func() {
		h, _ := own(b, "beta")
		beta <- h
	}()
	eventually(t, 10*time.Second, "beta queued", func() bool {
		children, _, err := obs.Conn().Children(path)
		queued := 0
		for _, c := range children {
			if _, ok := elect.ParseSequence(c); ok {
				queued++
			}
		}
		return err == nil && queued == 2
	})
	o := observe(t, obs, path)
	expect(t, o, elect.Snapshot, func(c elect.Change) error {
		if c.Owner == nil || c.Owner.ID != "alpha" || len(c.Queue) != 2 {
			return fmt.Errorf("want alpha owning and beta waiting, got %+v", c.Queue)
		}
		return nil
	})
	return la, beta, o
}

// waitQueue waits until n candidates are in e's queue.
func waitQueue(t *testing.T, e *elect.Election, n int) {
	t.Helper()
	eventually(t, 10*time.Second, fmt.Sprintf("%d candidates queued", n), func() bool {
		ps, err := e.Participants(context.Background())
		return err == nil && len(ps) == n
	})
}

// An owner writes its mark on the group node only over the version it
// expects there: data someone else wrote there during the tenure (an
// operator's set), however short the tenure, is kept, and the release is
// then reported without a reason rather than over it (a lock), or with
// the one its election's office records. Without such a write, the mark
// is written.
func TestReleaseKeepsSomeoneElsesGroupData(t *testing.T) {
	withAndWithoutAWriter(t, func(t *testing.T, recipe elect.Recipe, foreign bool) {
		addrs := sharedAddrs(t)
		path := groupPath(t)
		obs, a, b := session(t, addrs), session(t, addrs), session(t, addrs)
		ctx := ctxT(t, 30*time.Second)
		la, o := alphaHoldsBetaWaits(t, ctx, a, b, obs, path, recipe)
		if foreign {
			operatorWrites(t, addrs, path)
		}
		if err := la.Release(ctx); err != nil {
			t.Fatal(err)
		}
		want := releaseReason(recipe, !foreign)
		ch := expect(t, o, elect.OwnerChanged, ownerIs("beta"))
		if ch.Previous == nil || ch.Previous.ID != "alpha" || ch.Reason != want {
			t.Fatalf("handover %+v: want previous alpha, reason %q", ch, want)
		}
		checkGroupData(t, obs, path, foreign, la.Node())
	})
}

// The owner's session ends, so its node goes without a release or a mark,
// once with an operator's write to the group node before (between two of
// the observer's listings), once without. The observer reports the end
// with no reason either way: a single write to the group node is a release
// only in the transaction of the owner's deletion, or followed by the
// owner's own session queuing again. The next owner expected the mark that
// never came: without the operator's write its own release misses that
// guess, reads the group node and still writes its mark; with it, the
// guess matches the operator's write, and the next owner, holding for more
// than a second, reads the group node before its release and keeps the
// operator's data.
func TestOwnerGoneWithoutARelease(t *testing.T) {
	withAndWithoutAWriter(t, func(t *testing.T, recipe elect.Recipe, foreign bool) {
		addrs := sharedAddrs(t)
		path := groupPath(t)
		obs, a, b := session(t, addrs), session(t, addrs), session(t, addrs)
		ctx := ctxT(t, 30*time.Second)
		_, beta, o := alphaHoldsBetaWaitsFor(t, ctx, a, b, obs, path, recipe)
		if foreign {
			operatorWrites(t, addrs, path)
		}
		_ = a.Close() // alpha's session ends: its node goes, no mark
		if ch := expect(t, o, elect.OwnerChanged, ownerIs("beta")); ch.Previous == nil || ch.Previous.ID != "alpha" || ch.Reason != elect.ReasonUnknown {
			t.Fatalf("alpha's end %+v: want reason unknown (not a release)", ch)
		}
		h := <-beta
		if h == nil {
			t.Fatal("beta never owned")
		}
		if foreign {
			time.Sleep(time.Until(h.Since().Add(1100 * time.Millisecond)))
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		want := releaseReason(recipe, !foreign)
		for {
			c := next(t, o)
			if c.Kind != elect.OwnerChanged || c.Previous == nil || c.Previous.Node != h.Node() {
				continue
			}
			if c.Reason != want {
				t.Fatalf("%s's release reported %+v; want reason %q", h.Node(), c, want)
			}
			break
		}
		checkGroupData(t, obs, path, foreign, h.Node())
	})
}

// withAndWithoutAWriter runs f for each recipe, once with an operator
// writing the group node (foreign) and once without.
func withAndWithoutAWriter(t *testing.T, f func(t *testing.T, recipe elect.Recipe, foreign bool)) {
	for _, recipe := range []elect.Recipe{elect.RecipeElection, elect.RecipeLock} {
		for _, foreign := range []bool{false, true} {
			name := string(recipe) + "/nobody-else-wrote"
			if foreign {
				name = string(recipe) + "/an-operator-wrote"
			}
			t.Run(name, func(t *testing.T) { f(t, recipe, foreign) })
		}
	}
}

// operatorNote is what operatorWrites writes on a group node.
var operatorNote = []byte("owner: team-storage")

// operatorWrites writes operatorNote on the group node from a session of
// its own, as an operator's set would.
func operatorWrites(t *testing.T, addrs []string, path string) {
	t.Helper()
	if _, err := session(t, addrs).Conn().Set(path, operatorNote, -1); err != nil {
		t.Fatal(err)
	}
}

// releaseReason is how an observer reports a Release of recipe: with the
// reason herald's mark records, or, when no mark was written (someone
// else's data on the group node), unknown for a lock and, for an
// election, the reason its office records: the call the owner made.
func releaseReason(recipe elect.Recipe, marked bool) elect.Reason {
	switch {
	case !marked && recipe == elect.RecipeLock:
		return elect.ReasonUnknown
	case !marked:
		return elect.ReasonReleased
	case recipe == elect.RecipeLock:
		return elect.ReasonReleased
	}
	return elect.ReasonResigned
}

// checkGroupData checks the group node after node's release: the
// operator's note kept (foreign), else herald's mark naming node.
func checkGroupData(t *testing.T, s *elect.Session, path string, foreign bool, node string) {
	t.Helper()
	got, _, err := s.Conn().Get(path)
	switch {
	case err != nil:
		t.Fatal(err)
	case foreign && !bytes.Equal(got, operatorNote):
		t.Fatalf("group data after %s's release: %q; want the operator's %q kept", node, got, operatorNote)
	case !foreign && !bytes.Contains(got, []byte(node)):
		t.Fatalf("group data after %s's release: %q; want herald's mark naming it", node, got)
	}
}

// A busy lock while someone keeps writing the group node: every write of
// theirs survives herald's releases (the group node holds their last write
// at the end, whatever the clients did in between), and the lock keeps
// changing hands with one holder at a time.
func TestBusyLockNeverOverwritesSomeoneElsesGroupData(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	ctx := ctxT(t, 60*time.Second)
	var holders, cycles atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 4 {
		l, err := elect.NewLock(session(t, addrs), path, elect.CreateParents(), elect.WithID(fmt.Sprintf("c%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				h, err := l.Acquire(ctx)
				if err != nil {
					errs <- err
					return
				}
				if holders.Add(1) != 1 {
					errs <- fmt.Errorf("two holders at once")
				}
				cycles.Add(1)
				holders.Add(-1)
				if err := h.Release(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	op := session(t, addrs).Conn()
	eventually(t, 10*time.Second, "the group made", func() bool { ok, _, _ := op.Exists(path); return ok })
	last := ""
	for i := range 40 {
		last = fmt.Sprintf("operator note %d", i)
		if _, err := op.Set(path, []byte(last), -1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(25 * time.Millisecond)
	}
	before := cycles.Load()
	time.Sleep(200 * time.Millisecond) // more releases after the last write
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, _, err := op.Get(path)
	switch {
	case err != nil:
		t.Fatal(err)
	case string(got) != last:
		t.Fatalf("group data %q after %d handoffs; want the operator's last write %q kept", got, cycles.Load(), last)
	case cycles.Load() < 100 || cycles.Load() == before:
		t.Fatalf("%d handoffs, %d of them after the last write; want a busy lock throughout", cycles.Load(), cycles.Load()-before)
	}
}

// An operator writes the group node once while an owner holds for more
// than a second, and the next owner holds only briefly. The long holder
// reads the group node before its release and finds the operator's data;
// the brief one trusts the version it expects (one write of its
// predecessor's release), which the operator's single write would match
// exactly. The operator's data survives both releases: the long holder
// writes it back unchanged, so the expectation misses and the brief
// holder reads too.
func TestOperatorWriteSurvivesALongThenABriefTenure(t *testing.T) {
	for _, recipe := range []elect.Recipe{elect.RecipeElection, elect.RecipeLock} {
		t.Run(string(recipe), func(t *testing.T) {
			addrs := sharedAddrs(t)
			path := groupPath(t)
			obs, a, b := session(t, addrs), session(t, addrs), session(t, addrs)
			ctx := ctxT(t, 30*time.Second)
			la, beta, _ := alphaHoldsBetaWaitsFor(t, ctx, a, b, obs, path, recipe)
			time.Sleep(time.Until(la.Since().Add(1100 * time.Millisecond)))
			operatorWrites(t, addrs, path)
			if err := la.Release(ctx); err != nil {
				t.Fatal(err)
			}
			h := <-beta
			if h == nil {
				t.Fatal("beta never owned")
			}
			if err := h.Release(ctx); err != nil {
				t.Fatal(err)
			}
			checkGroupData(t, obs, path, true, h.Node())
		})
	}
}

// TestRegistrationsAreNoQueue: HBase's region servers (and backup
// masters) register as EPHEMERAL "host,port,startcode", the start code in
// milliseconds; the last ten of its thirteen digits parse as a sequence
// often enough, and /hbase/rs read as a queue had a region server for its
// owner, published as elected. A run of more than ten digits is no
// sequence: the nodes are suspect, the group has no owner and no node to
// wait behind.
func TestRegistrationsAreNoQueue(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, rs := session(t, addrs), session(t, addrs)
	group := groupPath(t) + "/hbase/rs"
	mkdirs(t, rs.Conn(), group)
	for _, n := range []string{"rs1.example,16020,1700000000011", "rs2.example,16020,1700000000005"} {
		if _, err := rs.Conn().Create(group+"/"+n, nil, zk.FlagEphemeral, openACL); err != nil {
			t.Fatal(err)
		}
	}
	ctx := ctxT(t, 10*time.Second)
	v, err := elect.ReadGroup(ctx, obs, group)
	if err != nil {
		t.Fatal(err)
	}
	if v.Owner != nil || v.Blocked != nil || len(v.Queue) != 2 || !strings.Contains(v.Queue[0].Suspect, "more than the ten") {
		t.Fatalf("region servers: owner %v, blocked %v, queue %+v; want no owner, all suspect", v.Owner, v.Blocked, v.Queue)
	}
	o := observe(t, obs, group)
	expect(t, o, elect.Snapshot, func(c elect.Change) error {
		if c.Owner != nil {
			return fmt.Errorf("owner %+v", c.Owner)
		}
		return nil
	})
}

// TestProtectedNamesAreNoID: a Curator LeaderLatch created without an id
// writes no data, and its protected name says only "latch": every owner
// was "latch", a change of owner read "latch" to "latch", and waiters
// (whose data no observer reads) were "latch" too. The id is the node's
// name then, as for any name that says nothing.
func TestProtectedNamesAreNoID(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, a, b := session(t, addrs), session(t, addrs), session(t, addrs)
	group := groupPath(t)
	mkdirs(t, a.Conn(), group)
	var nodes []string
	for i, s := range []*elect.Session{a, b} {
		n, err := s.Conn().Create(group+fmt.Sprintf("/_c_3f2504e0-4f89-11d3-9a0c-0305e82c330%d-latch-", i), nil, zk.FlagEphemeral|zk.FlagSequence, openACL)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n[len(group)+1:])
	}
	o := observe(t, obs, group)
	c := expect(t, o, elect.Snapshot, ownerIs(nodes[0]))
	if len(c.Queue) != 2 || c.Queue[1].ID != nodes[1] {
		t.Fatalf("queue %+v; want the waiter named by its node", c.Queue)
	}
	a.Close()
	if c := expect(t, o, elect.OwnerChanged, ownerIs(nodes[1])); c.Previous == nil || c.Previous.ID != nodes[0] {
		t.Fatalf("change %+v; want %s to %s", c, nodes[0], nodes[1])
	}
}

// TestOperatorWriteSurvivesASuspendedOwnersRelease: an election's owner
// that lets go for a reason other than a resignation (here its connection
// suspended) records it in the office. It wrote nothing on the group
// node, so an operator's write right after the next owner's listing
// matched the one write that owner expected of the release, and a brief
// next tenure wrote its mark over the operator's data. The release now
// writes the group node's data back twice, as the others do.
func TestOperatorWriteSurvivesASuspendedOwnersRelease(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	p := proxyTo(t, addrs[0])
	holder := session(t, []string{p.Addr()}, elect.WithSessionTimeout(10*time.Second))
	obs, b := session(t, addrs), session(t, addrs)
	ctx := ctxT(t, 30*time.Second)
	la, beta, _ := alphaHoldsBetaWaitsFor(t, ctx, holder, b, obs, path, elect.RecipeElection)
	p.Cut() // alpha's connection suspends: it gives the leadership up
	select {
	case <-la.Done():
	case <-ctx.Done():
		t.Fatal("alpha kept leading through a suspended connection")
	}
	if err := la.Resign(ctx); err != nil { // it stopped: its node goes now
		t.Fatal(err)
	}
	h := <-beta
	if h == nil {
		t.Fatal("beta never led")
	}
	operatorWrites(t, addrs, path)
	if err := h.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	checkGroupData(t, obs, path, true, h.Node())
}
