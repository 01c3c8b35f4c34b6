package publish

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// TestCurrentIsTheSnapshotOfTheState: folding the events of a group's
// changes, one after another, leaves a state whose snapshot events are
// exactly those Translate makes of a Snapshot of the group as it then is:
// the same types, owners, candidates, terms, zxid and ids (candidates' ids
// with the group node's czxid, as their names may recur).
func TestCurrentIsTheSnapshotOfTheState(t *testing.T) {
	const g, src, czxid = "/cur/g", "bridge-1", 77
	now := time.Unix(1700000000, 0).UTC()
	p := func(seq int32, czxid int64) *elect.Participant {
		node := "x_" + elect.FormatSequence(seq)
		return &elect.Participant{ID: node, Node: node, Session: 0x100 + int64(seq), Sequence: seq, Czxid: czxid}
	}
	a, b, c, d := p(1, 101), p(2, 102), p(3, 103), p(4, 104)
	n := &elect.Participant{ID: "3000", Node: "controller@105", Czxid: 105} // no session: Kafka's persistent /controller
	el := elect.RecipeElection
	// Why nobody owns, kept for the restatement as an owner's note is.
	const notLeader = g + " is not taken for a leader's node, so nobody holds it: persistent (no session holds it)"
	base := elect.Change{Group: g, Recipe: el, GroupCzxid: czxid}
	with := func(f func(*elect.Change)) elect.Change { c := base; f(&c); return c }
	steps := []struct {
		name   string
		change elect.Change
		state  elect.Change // a Snapshot of the group after the change
	}{
		{"snapshot", with(func(x *elect.Change) {
			x.Kind, x.Owner, x.Queue, x.Zxid = elect.Snapshot, a, []elect.Participant{*a, *b}, 10
		}),
			with(func(x *elect.Change) { x.Owner, x.Queue, x.Zxid = a, []elect.Participant{*a, *b}, 10 })},
		{"joined", with(func(x *elect.Change) { x.Kind, x.Owner, x.Candidate, x.Zxid = elect.Joined, a, c, 11 }),
			with(func(x *elect.Change) { x.Owner, x.Queue, x.Zxid = a, []elect.Participant{*a, *b, *c}, 11 })},
		{"ready", with(func(x *elect.Change) { x.Kind, x.Owner, x.Ready, x.Zxid = elect.Ready, a, true, 12 }),
			with(func(x *elect.Change) {
				x.Owner, x.Queue, x.Ready, x.Zxid = a, []elect.Participant{*a, *b, *c}, true, 12
			})},
		{"left", with(func(x *elect.Change) { x.Kind, x.Owner, x.Candidate, x.Ready, x.Zxid = elect.Left, a, b, true, 13 }),
			with(func(x *elect.Change) { x.Owner, x.Queue, x.Ready, x.Zxid = a, []elect.Participant{*a, *c}, true, 13 })},
		{"owner changed", with(func(x *elect.Change) {
			x.Kind, x.Previous, x.Owner, x.Queue, x.Zxid = elect.OwnerChanged, a, c, []elect.Participant{*c}, 14
		}), with(func(x *elect.Change) { x.Owner, x.Queue, x.Zxid = c, []elect.Participant{*c}, 14 })},
		{"hazard", with(func(x *elect.Change) {
			x.Kind, x.Owner, x.Candidate, x.Hazard, x.Zxid = elect.Joined, c, d, "mixed names", 15
		}),
			with(func(x *elect.Change) {
				x.Owner, x.Queue, x.Hazard, x.Zxid = c, []elect.Participant{*c, *d}, "mixed names", 15
			})},
		{"left", with(func(x *elect.Change) { x.Kind, x.Owner, x.Candidate, x.Zxid = elect.Left, c, d, 16 }),
			with(func(x *elect.Change) { x.Owner, x.Queue, x.Zxid = c, []elect.Participant{*c}, 16 })},
		{"no owner", with(func(x *elect.Change) { x.Kind, x.Previous, x.Zxid = elect.OwnerChanged, c, 17 }),
			with(func(x *elect.Change) { x.Zxid = 17 })},
		{"snapshot again", with(func(x *elect.Change) {
			x.Kind, x.Owner, x.Queue, x.Gap, x.Zxid = elect.Snapshot, d, []elect.Participant{*d, *b}, true, 20
		}),
			with(func(x *elect.Change) { x.Owner, x.Queue, x.Zxid = d, []elect.Participant{*d, *b}, 20 })},
		{"owner with a note", with(func(x *elect.Change) {
			x.Kind, x.Previous, x.Owner, x.Queue, x.Note, x.Zxid = elect.OwnerChanged, d, n, []elect.Participant{*n, *b}, elect.KRaftNote, 21
		}), with(func(x *elect.Change) {
			x.Owner, x.Queue, x.Note, x.Zxid = n, []elect.Participant{*n, *b}, elect.KRaftNote, 21
		})},
		{"no owner after the note", with(func(x *elect.Change) {
			x.Kind, x.Previous, x.Queue, x.Zxid = elect.OwnerChanged, n, []elect.Participant{*b}, 22
		}),
			with(func(x *elect.Change) { x.Queue, x.Zxid = []elect.Participant{*b}, 22 })},
		{"why nobody owns", with(func(x *elect.Change) {
			x.Kind, x.Queue, x.Note, x.Zxid = elect.Snapshot, []elect.Participant{*b}, notLeader, 23
		}),
			with(func(x *elect.Change) { x.Queue, x.Note, x.Zxid = []elect.Participant{*b}, notLeader, 23 })},
		{"no longer", with(func(x *elect.Change) { x.Kind, x.Queue, x.Zxid = elect.Snapshot, []elect.Participant{*b}, 24 }),
			with(func(x *elect.Change) { x.Queue, x.Zxid = []elect.Participant{*b}, 24 })},
	}
	cur := current{}
	for _, s := range steps {
		for _, e := range Translate(s.change, src, now.Add(-time.Minute)) {
			cur.apply(e)
		}
		st := s.state
		st.Kind = elect.Snapshot
		want := Translate(st, src, now)
		if len(want) > 0 && (want[0].Type.Gains() || want[0].Type.Loses()) {
			// The owner's event keeps its tenure's start, the event saying
			// nobody owns the time the owner was lost: the store's "since"
			// is theirs, not the restatement's.
			want[0].Time = now.Add(-time.Minute)
		}
		got := cur[g].snapshot(g, now)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after %s: restated\n%+v\nwant the snapshot of the state\n%+v", s.name, got, want)
		}
		for _, e := range got {
			if e.Gap || !e.Snapshot {
				t.Fatalf("after %s: restated event %+v: want a snapshot without gap", s.name, e)
			}
		}
	}
	if e := cur[g].snapshot(g, now)[0]; e.Note != "" {
		t.Fatalf("nobody owns, yet the restated event carries the last owner's note: %+v", e)
	}
	// The ids depend on the group node's czxid (the names may recur), so
	// the test above did check that it is kept.
	if Translate(with(func(x *elect.Change) { x.Kind, x.Owner, x.Candidate = elect.Joined, a, b }), src, now)[0].ID ==
		Translate(elect.Change{Kind: elect.Joined, Group: g, Recipe: el, Owner: a, Candidate: b}, src, now)[0].ID {
		t.Fatal("candidate ids do not depend on the group node's czxid here: pick names that may recur")
	}
}

// keeper is a memSink that keeps current state and can be made to say it
// lost it.
type keeper struct {
	*memSink
	lost atomic.Bool
}

func (k *keeper) StateLost() bool { return k.lost.Swap(false) }

func snapshotOf(group string, owner *elect.Participant, zxid int64) elect.Change {
	return elect.Change{Kind: elect.Snapshot, Group: group, Recipe: elect.RecipeElection, Owner: owner, Queue: []elect.Participant{*owner}, Zxid: zxid}
}

// TestStateLostRestatesThatSinkOnly: a sink that says, on reconnecting,
// that it lost its store of current state gets, after the batch it failed
// (retried as always), every group's current state as snapshots without
// gap, carrying the ids of a snapshot of that state; the other sink gets
// nothing more than what was published. A group Observed refuses is not
// restated.
func TestStateLostRestatesThatSinkOnly(t *testing.T) {
	own := &keeper{memSink: newMem("owners")}
	aud := newMem("audit")
	p := start(t, []Sink{own, aud}, WithBackoff(time.Millisecond, 10*time.Millisecond))
	now := time.Now()
	a, b, c, x := part("a", 1, 101), part("b", 2, 102), part("c", 3, 103), part("x", 4, 104)
	ctx := t.Context()
	var published []Event
	pub := func(ch elect.Change) {
		evs := Translate(ch, "src", now)
		published = append(published, evs...)
		if err := p.Publish(ctx, evs...); err != nil {
			t.Fatal(err)
		}
	}
	pub(snapshotOf("/r/one", a, 10))
	pub(snapshotOf("/r/two", b, 11))
	pub(snapshotOf("/r/gone", x, 12))
	waitFor(t, 5*time.Second, "the snapshots stored", func() bool { return own.count() == 3 && aud.count() == 3 })
	p.Observed(func(g string) bool { return g != "/r/gone" })

	own.mu.Lock()
	own.failNext, own.failErr = 1, errors.New("owners store deleted: "+ErrReconnect.Error())
	own.mu.Unlock()
	own.lost.Store(true)
	pub(elect.Change{Kind: elect.OwnerChanged, Group: "/r/one", Recipe: elect.RecipeElection, Previous: a, Owner: c, Queue: []elect.Participant{*c}, Zxid: 20})
	want := append([]Event(nil), published...)
	for _, ch := range []elect.Change{snapshotOf("/r/one", c, 20), snapshotOf("/r/two", b, 11)} {
		want = append(want, Translate(ch, "src", now)...)
	}
	waitFor(t, 5*time.Second, "the failed batch and the restatement stored", func() bool { return own.count() >= len(want) })
	time.Sleep(50 * time.Millisecond) // nothing more may come
	got := own.stored()
	if len(got) != len(want) {
		t.Fatalf("the sink that lost its store got %d events, want %d: %+v", len(got), len(want), briefs(got))
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Type != want[i].Type || got[i].Group != want[i].Group || got[i].Gap || got[i].Snapshot != want[i].Snapshot {
			t.Fatalf("event %d: got %s %s %s gap=%v snapshot=%v, want %s %s %s snapshot=%v", i,
				got[i].Group, got[i].Type, got[i].ID, got[i].Gap, got[i].Snapshot, want[i].Group, want[i].Type, want[i].ID, want[i].Snapshot)
		}
	}
	if n := aud.count(); n != len(published) {
		t.Fatalf("the other sink got %d events, want the %d published: a restatement is for the sink that lost its store only", n, len(published))
	}
	if st := p.Stats(); st.Published != int64(len(published)) {
		t.Errorf("Published = %d, want %d: a restatement is not published anew", st.Published, len(published))
	}

	// The refused group was forgotten: a second loss does not bring it back.
	p.Observed(nil)
	before := own.count()
	own.mu.Lock()
	own.failNext, own.failErr = 1, errors.New("deleted again")
	own.mu.Unlock()
	own.lost.Store(true)
	pub(elect.Change{Kind: elect.Joined, Group: "/r/two", Recipe: elect.RecipeElection, Owner: b, Candidate: a, Zxid: 21})
	waitFor(t, 5*time.Second, "the second restatement stored", func() bool { return own.count() >= before+1+1+2 })
	time.Sleep(50 * time.Millisecond)
	for _, e := range own.stored()[before:] {
		if e.Group == "/r/gone" {
			t.Fatalf("a group Observed refused was restated later: %+v", e)
		}
	}
	if n := own.count(); n != before+1+1+2 {
		t.Fatalf("second restatement: %d events, want %d (the join, /r/one's owner, /r/two's owner and candidate)", n-before, 1+1+2)
	}
}

// TestForgetDropsAGroupsState: a group the caller stopped observing
// (Forget) is held no more, and not restated after a loss.
func TestForgetDropsAGroupsState(t *testing.T) {
	own := &keeper{memSink: newMem("owners")}
	p := start(t, []Sink{own}, WithBackoff(time.Millisecond, 10*time.Millisecond))
	now := time.Now()
	ctx := t.Context()
	for i, g := range []string{"/f/kept", "/f/dropped"} {
		if err := p.Publish(ctx, Translate(snapshotOf(g, part("o", int32(i+1), int64(100+i)), int64(10+i)), "src", now)...); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "the snapshots stored", func() bool { return own.count() == 2 })
	p.Forget("/f/dropped")
	p.curMu.Lock()
	_, held := p.cur["/f/dropped"]
	p.curMu.Unlock()
	if held {
		t.Fatal("Forget left the group's state held")
	}
	own.mu.Lock()
	own.failNext, own.failErr = 1, errors.New("deleted")
	own.mu.Unlock()
	own.lost.Store(true)
	if err := p.Publish(ctx, Translate(snapshotOf("/f/kept", part("o", 1, 100), 12), "src", now)...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the restatement stored", func() bool { return own.count() >= 4 })
	time.Sleep(50 * time.Millisecond)
	dropped := 0
	for _, e := range own.stored() {
		if e.Group == "/f/dropped" {
			dropped++
		}
	}
	if dropped != 1 {
		t.Fatalf("/f/dropped: %d events stored, want its one snapshot: a forgotten group was restated", dropped)
	}
	if n := own.count(); n != 4 {
		t.Fatalf("%d events stored, want 4 (two snapshots, the retried one, /f/kept restated)", n)
	}
}

// TestNoStateHeldWithoutAKeeper: with no sink that keeps a store of
// current state, the pipeline holds no group's state.
func TestNoStateHeldWithoutAKeeper(t *testing.T) {
	aud := newMem("audit")
	p := start(t, []Sink{aud})
	if err := p.Publish(t.Context(), Translate(snapshotOf("/n/g", part("o", 1, 100), 10), "src", time.Now())...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the snapshot stored", func() bool { return aud.count() == 1 })
	p.curMu.Lock()
	n := len(p.cur)
	p.curMu.Unlock()
	if n != 0 {
		t.Fatalf("the pipeline holds %d groups' state with no sink that keeps it", n)
	}
}

// checker is a keeper that can look at its store while idle
// (StoreChecker), and whose Connect fails while refusals last.
type checker struct {
	*keeper
	gone     atomic.Bool
	looks    atomic.Int64
	refusals atomic.Int64
}

func (c *checker) StoreGone(ctx context.Context) bool {
	c.looks.Add(1)
	if c.gone.Swap(false) {
		c.lost.Store(true)
		return true
	}
	return false
}

func (c *checker) Connect(ctx context.Context) error {
	if c.refusals.Load() > 0 {
		c.refusals.Add(-1)
		return errors.New("servers away")
	}
	return c.keeper.Connect(ctx)
}

// TestIdleStoreCheckRestates: a sink with nothing to write is asked every
// WithStoreCheck whether its store is still there; when it is gone, the
// sink is connected again (again at the next look while Connect fails:
// no write will retry it) and every group's state is written to it, with
// nothing published.
func TestIdleStoreCheckRestates(t *testing.T) {
	own := &checker{keeper: &keeper{memSink: newMem("owners")}}
	p := start(t, []Sink{own}, WithBackoff(time.Millisecond, 10*time.Millisecond), WithStoreCheck(10*time.Millisecond))
	now := time.Now()
	for i, g := range []string{"/i/one", "/i/two"} {
		if err := p.Publish(t.Context(), Translate(snapshotOf(g, part("o", int32(i+1), int64(100+i)), int64(10+i)), "src", now)...); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "the snapshots stored", func() bool { return own.count() == 2 })
	waitFor(t, 5*time.Second, "an idle look at the store", func() bool { return own.looks.Load() > 0 })
	if own.count() != 2 {
		t.Fatalf("a look that found the store there wrote %d events, want none", own.count()-2)
	}

	own.refusals.Store(2)
	own.gone.Store(true)
	waitFor(t, 5*time.Second, "every group restated with nothing published", func() bool { return own.count() == 4 })
	if own.refusals.Load() != 0 {
		t.Fatalf("restated with %d refusals of Connect left", own.refusals.Load())
	}
	for _, e := range own.stored()[2:] {
		if !e.Snapshot || e.Gap {
			t.Fatalf("restated %s %s snapshot=%v gap=%v, want a snapshot without gap", e.Group, e.Type, e.Snapshot, e.Gap)
		}
	}
	if st := p.Stats(); st.Published != 2 {
		t.Errorf("Published = %d, want 2: a restatement is not published anew", st.Published)
	}
}

// TestStoreCheckOff: WithStoreCheck(0) never looks; a negative interval
// is refused.
func TestStoreCheckOff(t *testing.T) {
	own := &checker{keeper: &keeper{memSink: newMem("owners")}}
	p := start(t, []Sink{own}, WithStoreCheck(0))
	if err := p.Publish(t.Context(), Translate(snapshotOf("/o/one", part("o", 1, 100), 10), "src", time.Now())...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the snapshot stored", func() bool { return own.count() == 1 })
	time.Sleep(100 * time.Millisecond)
	if n := own.looks.Load(); n != 0 {
		t.Fatalf("looked at the store %d times with the look off", n)
	}
	if _, err := New([]Sink{newMem("x")}, WithStoreCheck(-time.Second)); !errors.Is(err, ErrBadOption) {
		t.Fatalf("WithStoreCheck(-1s): err %v, want ErrBadOption", err)
	}
}
