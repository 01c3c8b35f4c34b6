package elect_test

import (
	"context"
	"encoding/json"
	"errors"
	pathpkg "path"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// deposedLock is a lock group whose first owner's node was deleted by hand
// after a second waiter queued: first lost, second owns.
func deposedLock(t *testing.T) (g string, first, second *elect.Handle) {
	return deposed(t, elect.RecipeLock, nil)
}

// deposed is deposedLock for recipe, in a group made first with data
// when data is not nil.
func deposed(t *testing.T, recipe elect.Recipe, data []byte) (g string, first, second *elect.Handle) {
	t.Helper()
	addrs := sharedAddrs(t)
	g = groupPath(t)
	s1, s2 := session(t, addrs), session(t, addrs)
	if data != nil {
		if _, err := s1.Conn().Create(pathpkg.Dir(g), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
		if _, err := s1.Conn().Create(g, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	join := func(s *elect.Session, id string, opts ...elect.Option) *elect.Handle {
		t.Helper()
		var h *elect.Handle
		var err error
		if recipe == elect.RecipeLock {
			var l *elect.Lock
			if l, err = elect.NewLock(s, g, opts...); err == nil {
				h, err = l.Acquire(ctxT(t, 10*time.Second))
			}
		} else {
			var e *elect.Election
			if e, err = elect.NewElection(s, g, opts...); err == nil {
				h, err = e.Campaign(ctxT(t, 10*time.Second), id)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	first = join(s1, "first", elect.CreateParents())
	termKnown(t, first)
	// Before ownership ends there is nothing to record.
	_, before, err := s1.Conn().Get(g)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.RecordStopped(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if b, after, err := s1.Conn().Get(g); err != nil || after.Version != before.Version {
		t.Fatalf("RecordStopped while the owner held wrote %q (%v)", b, err)
	}
	second = join(s2, "second", elect.OnQueued(func(string) {
		if err := s2.Conn().Delete(first.NodePath(), -1); err != nil {
			t.Error(err)
		}
	}))
	select {
	case <-first.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the first owner never heard that its node was deleted")
	}
	return g, first, second
}

// termKnown waits for owner h's term before a test deletes its node. The
// term comes with the owner's first watch on its node, a round trip into
// the tenure, and RecordStopped records nothing without it: deposed
// before, on a loaded machine, the owner wrote no record, and the next
// owner's watch never fired.
func termKnown(t *testing.T, h *elect.Handle) {
	t.Helper()
	if h.Term() == 0 {
		t.Fatalf("owner %s never learned its term", h.Node())
	}
}

// recordEndsTheWait checks that second, the owner after first, finds no
// release on record, that first's RecordStopped fires the watch second
// then holds, and that second finds the release on record after it.
func recordEndsTheWait(t *testing.T, first, second *elect.Handle) {
	t.Helper()
	released, ch, err := second.PredecessorReleasedW(ctxT(t, 10*time.Second))
	if err != nil || released || ch == nil {
		t.Fatalf("before the record: PredecessorReleasedW = %v, watch %v, %v; want false with a watch", released, ch != nil, err)
	}
	if err := first.RecordStopped(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the record fired no watch")
	}
	if got, err := second.PredecessorReleased(ctxT(t, 10*time.Second)); err != nil || !got {
		t.Errorf("after the record: PredecessorReleased = %v, %v; want true", got, err)
	}
}

// markedNode is the node herald's mark on group g names as released.
func markedNode(t *testing.T, s *elect.Session, g string) string {
	t.Helper()
	b, _, err := s.Conn().Get(g)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Released *elect.Release `json:"released"`
	}
	if json.Unmarshal(b, &m) != nil || m.Released == nil {
		return ""
	}
	return m.Released.Node
}

// TestRecordStopped: an owner whose node was deleted by hand records,
// once its work stopped, that it did; the next owner, which found no
// release and would wait for a bound, learns it from its watch at once.
// The record never replaces a later owner's release, nor data someone
// else keeps on the group node.
func TestRecordStopped(t *testing.T) {
	t.Run("ends the wait", func(t *testing.T) {
		g, first, second := deposedLock(t)
		recordEndsTheWait(t, first, second)
		if n := markedNode(t, second.Session(), g); n != first.Node() {
			t.Errorf("the mark names %q, want the deposed owner's %q", n, first.Node())
		}
	})
	t.Run("never over a later release", func(t *testing.T) {
		g, first, second := deposedLock(t)
		if err := second.Release(ctxT(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := first.RecordStopped(ctxT(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		if n := markedNode(t, second.Session(), g); n != second.Node() {
			t.Errorf("the mark names %q, want the later owner's release (%q) kept", n, second.Node())
		}
	})
	t.Run("never over someone else's data", func(t *testing.T) {
		g, first, second := deposedLock(t)
		c := second.Session().Conn()
		if _, err := c.Set(g, []byte("kept by an operator"), -1); err != nil {
			t.Fatal(err)
		}
		if err := first.RecordStopped(ctxT(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		if b, _, err := c.Get(g); err != nil || string(b) != "kept by an operator" {
			t.Errorf("the group node holds %q (%v), want the operator's data untouched", b, err)
		}
	})
}

// TestRecordStoppedUnderForeignGroupData: an election whose group node
// holds someone else's data, where herald writes no mark. A deposed
// owner's record that its work stopped went nowhere, and the next owner
// waited its bound; it goes into the office now, as releases do there,
// and the next owner's watch tells it. The group node's data is left as
// it was.
func TestRecordStoppedUnderForeignGroupData(t *testing.T) {
	g, first, second := deposed(t, elect.RecipeElection, []byte("kept by an operator"))
	recordEndsTheWait(t, first, second)
	c := second.Session().Conn()
	if b, _, err := c.Get(g); err != nil || string(b) != "kept by an operator" {
		t.Errorf("the group node holds %q (%v), want the operator's data untouched", b, err)
	}
	o, _, err := elect.ReadOffice(ctxT(t, 10*time.Second), second.Session(), g)
	if err != nil || o.Released == nil || o.Released.Node != first.Node() || o.Released.Reason != elect.ReasonDeleted {
		t.Errorf("office %+v (%v): want the deposed owner's record, reason %q", o, err, elect.ReasonDeleted)
	}
}

// TestRecordStoppedIsNoResignation: an owner deleted by hand records that
// it stopped and, its session alive, campaigns again at once (herald run
// --rejoin). An observer that lists only after all of it must not take
// the record for a resignation: written once, with the last owner's
// session queued again, a mark is one, read without reading the mark.
// The record is written twice, as every release for another reason is,
// so the observer reads it and reports the deletion.
func TestRecordStoppedIsNoResignation(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	p := proxyTo(t, addrs[0])
	obs := session(t, []string{p.Addr()}, elect.WithSessionTimeout(10*time.Second))
	a, b := session(t, addrs), session(t, addrs)
	ctx := ctxT(t, 30*time.Second)
	la, o := alphaLeadsBetaWaits(t, ctx, a, b, obs, path)
	p.Blackhole(true)
	if err := a.Conn().Delete(la.NodePath(), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-la.Done():
	case <-ctx.Done():
		t.Fatal("alpha never heard that its node was deleted")
	}
	if err := la.RecordStopped(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := elect.NewElection(a, path)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = again.Campaign(ctx, "alpha") }()
	eventually(t, 10*time.Second, "alpha queued again", func() bool {
		ch, _, err := a.Conn().Children(path)
		return err == nil && len(ch) >= 2 && !slices.Contains(ch, la.Node())
	})
	p.Blackhole(false)
	ch := expect(t, o, elect.OwnerChanged, ownerIs("beta"))
	if ch.Previous == nil || ch.Previous.Node != la.Node() || ch.Reason != elect.ReasonDeleted {
		t.Fatalf("handover %+v: want previous %s, reason %q", ch, la.Node(), elect.ReasonDeleted)
	}
}

// TestReleaseUnderForeignGroupDataIsRecorded: the group node holds
// someone else's data, under which herald writes no mark. An election's
// resignation was then recorded nowhere, and the next herald owner waited
// as for a node deleted by hand (herald run: 11/12 of the session
// timeout). It is recorded in the office now; the group node's data is
// left as it was.
func TestReleaseUnderForeignGroupDataIsRecorded(t *testing.T) {
	obs, path := resignationIsRecorded(t, []byte("kept by an operator"), zk.WorldACL(zk.PermAll))
	if d, _, err := obs.Conn().Get(path); err != nil || string(d) != "kept by an operator" {
		t.Errorf("the group node holds %q (%v), want the operator's data untouched", d, err)
	}
}

// TestReleaseUnderAGroupHeraldMayNotWriteIsRecorded: the group's ACL lets
// candidates in but not write the group node, so herald writes no mark.
// An election's resignation then went unrecorded, and the next herald
// owner waited as for a node deleted by hand; it is recorded in the
// office now.
func TestReleaseUnderAGroupHeraldMayNotWriteIsRecorded(t *testing.T) {
	resignationIsRecorded(t, nil, zk.WorldACL(zk.PermCreate|zk.PermRead|zk.PermDelete|zk.PermAdmin))
}

// resignationIsRecorded makes the test's group node with data and acl,
// has alpha lead it and beta wait, and checks that alpha's resignation is
// on record: beta finds it (PredecessorReleased) and an observer reports
// it. It returns the observer's session and the group.
func resignationIsRecorded(t *testing.T, data []byte, acl []zk.ACL) (*elect.Session, string) {
	t.Helper()
	addrs := sharedAddrs(t)
	path := groupPath(t)
	a, b, obs := session(t, addrs), session(t, addrs), session(t, addrs)
	if _, err := obs.Conn().Create(pathpkg.Dir(path), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	if _, err := obs.Conn().Create(path, data, 0, acl); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 30*time.Second)
	la, next, o := alphaHoldsBetaWaitsFor(t, ctx, a, b, obs, path, elect.RecipeElection)
	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	betaFindsTheRelease(t, ctx, next, o, la, elect.ReasonResigned)
	return obs, path
}

// betaFindsTheRelease waits for beta, the owner after alpha (la), and
// checks that alpha's release is on record: beta finds it
// (PredecessorReleased) and the observer o reports the handover from
// alpha with reason. It returns the handover.
func betaFindsTheRelease(t *testing.T, ctx context.Context, next <-chan *elect.Handle, o source, la *elect.Handle, reason elect.Reason) elect.Change {
	t.Helper()
	var lb *elect.Handle
	select {
	case lb = <-next:
	case <-ctx.Done():
		t.Fatal("beta never owned")
	}
	if got, err := lb.PredecessorReleased(ctx); err != nil || !got {
		t.Errorf("beta: PredecessorReleased = %v, %v; want true", got, err)
	}
	ch := expect(t, o, elect.OwnerChanged, ownerIs("beta"))
	if ch.Previous == nil || ch.Previous.Node != la.Node() || ch.Reason != reason {
		t.Errorf("handover %+v: want from %s, reason %q", ch, la.Node(), reason)
	}
	return ch
}

// TestLockReleaseNotedOnTheSessionNode: a lock group whose node holds
// someone else's data, or whose ACL lets herald create and delete but not
// write it, may hold neither herald's mark nor an office. A release there
// was recorded nowhere, and the next herald lock waited as for a node
// deleted by hand (11/12 of the session timeout) at every handoff. Where
// the owners keep session nodes (ProveSessionEnd), the release's
// transaction notes it on the owner's session node: the next owner finds
// it (PredecessorReleased), and an observer reports "released". So too
// RecordStopped, for an owner deleted by hand: its note ends the next
// owner's wait, through the watch that owner holds.
func TestLockReleaseNotedOnTheSessionNode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		data   []byte
		acl    []zk.ACL
		byHand bool
	}{
		{"someone else's data, released", []byte("kept by an operator"), zk.WorldACL(zk.PermAll), false},
		{"no write permission, released", nil, zk.WorldACL(zk.PermCreate | zk.PermRead | zk.PermDelete | zk.PermAdmin), false},
		{"someone else's data, deleted by hand", []byte("kept by an operator"), zk.WorldACL(zk.PermAll), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs := sharedAddrs(t)
			path := groupPath(t)
			a, b, obs := session(t, addrs), session(t, addrs), session(t, addrs)
			mkdirs(t, obs.Conn(), pathpkg.Dir(path))
			if _, err := obs.Conn().Create(path, tc.data, 0, tc.acl); err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t, 30*time.Second)
			acquire := func(s *elect.Session, id string) (*elect.Handle, error) {
				l, err := elect.NewLock(s, path, elect.WithID(id), elect.ProveSessionEnd())
				if err != nil {
					return nil, err
				}
				return l.Acquire(ctx)
			}
			la, err := acquire(a, "alpha")
			if err != nil {
				t.Fatal(err)
			}
			looked := make(chan bool, 4)
			defer elect.OnSessionLook(func(prev string, seen bool) {
				if prev == la.Node() {
					looked <- seen
				}
			})()
			next := make(chan *elect.Handle, 1)
			go func() {
				h, _ := acquire(b, "beta")
				next <- h
			}()
			select {
			case seen := <-looked:
				if !seen {
					t.Fatal("beta did not see alpha's session node")
				}
			case <-ctx.Done():
				t.Fatal("beta never looked for alpha's session node")
			}
			o := observe(t, obs, path)
			expect(t, o, elect.Snapshot, ownerIs("alpha"))
			if !tc.byHand {
				if err := la.Release(ctx); err != nil {
					t.Fatal(err)
				}
				betaFindsTheRelease(t, ctx, next, o, la, elect.ReasonReleased)
				// alpha's release learned that the group node takes no mark.
				if !la.ReleasesRecorded() {
					t.Error("alpha: ReleasesRecorded = false with a session node to note releases on")
				}
			} else {
				termKnown(t, la)
				if err := obs.Conn().Delete(la.NodePath(), -1); err != nil {
					t.Fatal(err)
				}
				select {
				case <-la.Done():
				case <-ctx.Done():
					t.Fatal("alpha never heard that its node was deleted")
				}
				var lb *elect.Handle
				select {
				case lb = <-next:
				case <-ctx.Done():
					t.Fatal("beta never owned")
				}
				if lb == nil || lb.Predecessor() != la.Node() {
					t.Fatalf("beta owns after %v, want after %s", lb, la.Node())
				}
				recordEndsTheWait(t, la, lb)
			}
			if d, _, err := obs.Conn().Get(path); err != nil || string(d) != string(tc.data) {
				t.Errorf("the group node holds %q (%v), want %q untouched", d, err, tc.data)
			}
		})
	}
}

// TestRecordStoppedSkipsAGroupMadeAnew: the owner's node went with its
// whole group (a deleteall), and a new copy made the group again. The
// deposed owner's record of its stop names its node, and a record vouches
// for the owners before the node it names, by sequence alone: written into
// the group made anew, it vouched for that group's owners too, and a copy
// behind the new group's first owner (frozen, its node deleted by hand)
// started its command 3.4 s beside the frozen one's (found by an
// adversarial test). Nothing of the old group is left to vouch for, so
// nothing is written.
func TestRecordStoppedSkipsAGroupMadeAnew(t *testing.T) {
	owner, s2, lock, _ := runNoteGroup(t)
	next := lock(s2)
	if err := owner.RecordStopped(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	b, _, err := s2.Conn().Get(next.Group())
	if err != nil {
		t.Fatal(err)
	}
	var mark struct {
		Released *elect.Release `json:"released"`
	}
	if json.Unmarshal(b, &mark) == nil && mark.Released != nil && mark.Released.Node == owner.Node() {
		t.Errorf("the deposed owner recorded its stop in the group made anew: %s", b)
	}
}

// TestStaleRecordInAGroupMadeAnewVouchesForNothing: RecordStopped reads
// the group node before it writes, so a group deleted whole and made anew
// between the two, at the version it read, takes the deposed owner's
// record of its stop. That record names a node of the old group, and a
// release vouches, by sequence, for every node before the one it names: a
// copy joining the new group after its first owner's node was deleted by
// hand (that owner frozen, its command running) found nobody unaccounted
// for before it and would start at once. A mark whose release is older
// than the group node it is in now says nothing of that group.
func TestStaleRecordInAGroupMadeAnewVouchesForNothing(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	lock := func(s *elect.Session) *elect.Handle { t.Helper(); return lockedIn(t, s, g, elect.CreateParents()) }
	s1 := session(t, addrs)
	owner := lock(s1) // the old group's first node, as the new group's first is
	term := owner.Term()
	if term == 0 {
		t.Fatal("the owner has no term")
	}
	c := s1.Conn()
	for _, p := range []string{owner.NodePath(), g} { // a deleteall
		if err := c.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
	}
	first := lock(session(t, addrs)) // the group made anew
	rec := elect.Release{Node: owner.Node(), ID: "deposed", Term: term, Reason: elect.ReasonDeleted, Time: time.Now().UTC(), Vouches: true}
	stale, err := json.Marshal(map[string]any{"herald": 1, "recipe": "lock", "released": rec})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set(g, stale, 0); err != nil { // the version RecordStopped read: 0
		t.Fatal(err)
	}
	if err := c.Delete(first.NodePath(), -1); err != nil { // the first owner, frozen, its node deleted by hand
		t.Fatal(err)
	}
	next := lock(session(t, addrs))
	released, _, err := next.PredecessorReleasedW(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if released && next.PredecessorVouched() {
		t.Errorf("a record written into the group made anew by an owner of the old one vouched for the new group's first owner, whose node went by hand (node %s, group mark %s)", next.Node(), stale)
	}
}

// TestStaleRecordInANewOfficeVouchesForNothing: the same, for an election,
// whose office takes the record where the group node may not (see
// recordStoppedInOffice). An office may be younger than the owner whose
// record it holds, so the record is checked against the group node's
// czxid, not the office's.
func TestStaleRecordInANewOfficeVouchesForNothing(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	campaign := func(s *elect.Session, id string) *elect.Handle {
		t.Helper()
		return campaignedIn(t, s, g, id, elect.CreateParents())
	}
	s1 := session(t, addrs)
	// A child before the old leader's node, so that its sequence is the
	// one just before that of the new group's next node (the new group's
	// first node and its office come before that one).
	for _, p := range []string{pathpkg.Dir(g), g, g + "/before"} {
		if _, err := s1.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	owner := campaign(s1, "deposed")
	term := owner.Term()
	c := s1.Conn()
	kids, _, err := c.Children(g)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kids { // a deleteall
		if err := c.Delete(g+"/"+k, -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(g, -1); err != nil {
		t.Fatal(err)
	}
	first := campaign(session(t, addrs), "first") // the group made anew
	rec := elect.Release{Node: owner.Node(), ID: "deposed", Term: term, Reason: elect.ReasonDeleted, Time: time.Now().UTC(), Vouches: true}
	stale, err := json.Marshal(elect.Office{Herald: 1, Released: &rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(first.NodePath(), -1); err != nil { // the first leader, frozen, its node deleted by hand
		t.Fatal(err)
	}
	if _, err := c.Create(g+"/"+elect.OfficeNode, stale, 0, zk.WorldACL(zk.PermAll)); err != nil { // made after the old owner's node
		t.Fatal(err)
	}
	next := campaign(session(t, addrs), "next")
	released, _, err := next.PredecessorReleasedW(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if released && next.PredecessorVouched() {
		t.Errorf("a record written into the new group's office by an owner of the old group vouched for the new group's first leader, whose node went by hand (node %s, office %s)", next.Node(), stale)
	}
}
