package publish

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// seq returns n elected events for group, zxid 1..n, each a new owner.
func seq(group string, n int, base time.Time) []Event {
	out := make([]Event, n)
	for i := range out {
		node := fmt.Sprintf("n_%010d", i)
		out[i] = Event{
			Type: LeaderElected, Group: group, Recipe: elect.RecipeElection,
			Owner: &Participant{ID: node, Node: node, Sequence: int32(i)},
			Term:  int64(i + 1), Zxid: int64(i + 1), Time: base, Source: "test",
		}.WithID()
	}
	return out
}

// start builds and runs a pipeline, closing it at cleanup.
func start(t *testing.T, sinks []Sink, opts ...Option) *Pipeline {
	t.Helper()
	p, err := New(sinks, opts...)
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- p.Run(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Close(ctx)
		if err := <-runErr; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return p
}

// checkOrder fails unless every group's events arrived with zxids 1..want
// exactly, in order.
func checkOrder(t *testing.T, got []Event, groups []string, want int) {
	t.Helper()
	next := map[string]int64{}
	for _, e := range got {
		next[e.Group]++
		if e.Zxid != next[e.Group] {
			t.Fatalf("group %s: got zxid %d at position %d: reordered, duplicated or missing", e.Group, e.Zxid, next[e.Group])
		}
	}
	for _, g := range groups {
		if next[g] != int64(want) {
			t.Errorf("group %s: %d events, want %d", g, next[g], want)
		}
	}
}

func TestOrderPerGroupUnderConcurrentPublish(t *testing.T) {
	s := newMem("mem")
	p := start(t, []Sink{s}, WithBatchSize(7))
	const publishers, groupsEach, n = 8, 10, 60
	var groups []string
	var wg sync.WaitGroup
	errs := make(chan error, publishers)
	for w := 0; w < publishers; w++ {
		var mine [][]Event
		for g := 0; g < groupsEach; g++ {
			name := fmt.Sprintf("/order/w%d/g%d", w, g)
			groups = append(groups, name)
			mine = append(mine, seq(name, n, time.Now()))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ { // interleave this publisher's groups
				for _, evs := range mine {
					if err := p.Publish(context.Background(), evs[i]); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := publishers * groupsEach * n
	waitFor(t, 10*time.Second, "all events stored", func() bool { return s.count() >= total })
	checkOrder(t, s.stored(), groups, n)
}

func TestFailingSinkGetsEverythingInOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"reconnect", fmt.Errorf("broker gone: %w", ErrReconnect)},
		{"plain", errors.New("timeout")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newMem("flaky")
			s.failNext, s.failErr = 5, tc.err
			clk := &fakeClock{now: time.Now()}
			p := start(t, []Sink{s}, WithBatchSize(3), WithClock(clk), WithBackoff(time.Millisecond, 8*time.Millisecond))
			evs := seq("/flaky/"+tc.name, 20, clk.Now())
			if err := p.Publish(context.Background(), evs...); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 5*time.Second, "20 events stored", func() bool { return s.count() >= 20 })
			checkOrder(t, s.stored(), []string{evs[0].Group}, 20)
			s.mu.Lock()
			connects, viol := s.connects, s.violations
			s.mu.Unlock()
			if len(viol) > 0 {
				t.Fatalf("protocol violations: %v", viol)
			}
			if connects != 6 { // first, then after each of 5 failures
				t.Errorf("Connect called %d times, want 6", connects)
			}
			st := p.Stats().Sinks["flaky"]
			if st.Errors != 5 || !st.Connected || st.Delivered != 20 {
				t.Errorf("stats %+v: want 5 errors, connected, 20 delivered", st)
			}
			waits := clk.recorded()
			if len(waits) != 5 || waits[4] > 8*time.Millisecond || waits[0] <= 0 {
				t.Errorf("backoff waits %v: want 5 positive waits capped at 8ms", waits)
			}
		})
	}
}

func TestBlockedSinkBlocksNeitherPublishNorOthers(t *testing.T) {
	slow, fast := newMem("slow"), newMem("fast")
	release := slow.block()
	defer release()
	p, err := New([]Sink{slow, fast}, WithBatchSize(10))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.Run(context.Background()) }()
	evs := seq("/blocked/g", 500, time.Now())
	done := make(chan error, 1)
	go func() {
		for i := range evs {
			if err := p.Publish(context.Background(), evs[i]); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Publish blocked behind a stuck sink")
	}
	waitFor(t, 5*time.Second, "fast sink has everything", func() bool { return fast.count() == 500 })
	if slow.count() != 0 {
		t.Fatalf("blocked sink stored %d events", slow.count())
	}
	// Close with a short deadline: the stuck sink's backlog is reported.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = p.Close(ctx)
	var ue *UndeliveredError
	if !errors.Is(err, ErrUndelivered) || !errors.As(err, &ue) {
		t.Fatalf("Close = %v, want an UndeliveredError", err)
	}
	if ue.Left["slow"] != 500 || ue.Left["fast"] != 0 || len(ue.Stuck) != 0 {
		t.Fatalf("left %v stuck %v: want slow=500 only", ue.Left, ue.Stuck)
	}
	if err := p.Publish(context.Background(), evs[0]); !errors.Is(err, ErrClosed) {
		t.Fatalf("Publish after Close = %v, want ErrClosed", err)
	}
}

func TestPublishRejectsInvalidAtomically(t *testing.T) {
	s := newMem("strict")
	p := start(t, []Sink{s})
	good := seq("/strict/g", 2, time.Now())
	bad := good[1]
	bad.Group = "relative"
	err := p.Publish(context.Background(), good[0], bad)
	if err == nil {
		t.Fatal("Publish accepted an event with a relative group")
	}
	if p.Stats().Published != 0 {
		t.Fatalf("a rejected call queued %d events", p.Stats().Published)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	a := newMem("a")
	for name, tc := range map[string]struct {
		sinks []Sink
		opts  []Option
	}{
		"no sinks":         {nil, nil},
		"nil sink":         {[]Sink{nil}, nil},
		"duplicate names":  {[]Sink{a, newMem("a")}, nil},
		"lossless unknown": {[]Sink{a}, []Option{Lossless("audit")}},
		"batch zero":       {[]Sink{a}, []Option{WithBatchSize(0)}},
		"backlog zero":     {[]Sink{a}, []Option{WithBacklog(0)}},
		"backoff inverted": {[]Sink{a}, []Option{WithBackoff(time.Second, time.Millisecond)}},
		"empty source":     {[]Sink{a}, []Option{WithSource("")}},
	} {
		if _, err := New(tc.sinks, tc.opts...); !errors.Is(err, ErrBadOption) {
			t.Errorf("%s: New = %v, want ErrBadOption", name, err)
		}
	}
}

func TestConsumeTranslatesAndPublishes(t *testing.T) {
	s := newMem("consume")
	clk := &fakeClock{now: time.Date(2025, 5, 6, 7, 8, 9, 0, time.UTC)}
	p := start(t, []Sink{s}, WithSource("bridge-7"), WithClock(clk))
	a, b := part("a", 1, 11), part("b", 2, 12)
	ch := make(chan elect.Change, 3)
	ch <- elect.Change{Kind: elect.Snapshot, Group: "/c/g", Recipe: elect.RecipeLock, Owner: a, Queue: []elect.Participant{*a, *b}, Zxid: 12}
	ch <- elect.Change{Kind: elect.OwnerChanged, Group: "/c/g", Recipe: elect.RecipeLock, Previous: a, Owner: b, Reason: elect.ReasonReleased, Zxid: 13}
	ch <- elect.Change{Kind: elect.Unknown, Group: "/c/g", Recipe: elect.RecipeLock}
	close(ch)
	if err := p.Consume(context.Background(), ch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "4 events", func() bool { return s.count() >= 4 })
	got := s.stored()
	want := []Type{LockAcquired, CandidateJoined, LockReleased, LockAcquired}
	for i, e := range got {
		if i >= len(want) || e.Type != want[i] || e.Source != "bridge-7" || !e.Time.Equal(clk.now) {
			t.Fatalf("event %d: %s from %s at %v; want types %v from bridge-7", i, e.Type, e.Source, e.Time, want)
		}
	}
}

// deafSink ignores cancellation in Write until released.
// busy reports whether the worker has taken a batch (it sits in Write).

// A sink that refuses an event for good drops that event only (counted and
// named in Stats) and delivers everything else in order; another sink
// still gets the refused event.
func TestRefusedEventDoesNotStallTheSink(t *testing.T) {
	picky, other := newMem("picky"), newMem("other")
	clk := &fakeClock{now: time.Now()}
	evs := seq("/refuse/g", 12, clk.Now())
	picky.refuse = map[string]bool{evs[1].ID: true, evs[5].ID: true, evs[11].ID: true}
	p := start(t, []Sink{picky, other}, WithBatchSize(4), WithClock(clk), WithBackoff(time.Millisecond, 8*time.Millisecond))
	if err := p.Publish(context.Background(), evs...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "other has all 12", func() bool { return other.count() == 12 })
	waitFor(t, 5*time.Second, "picky settled", func() bool { return p.Stats().Sinks["picky"].Backlog == 0 })
	var want []string
	for i, e := range evs {
		if i != 1 && i != 5 && i != 11 {
			want = append(want, e.ID)
		}
	}
	var got []string
	for _, e := range picky.stored() {
		got = append(got, e.ID)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("picky stored %v, want %v (all but the refused, in order)", got, want)
	}
	st := p.Stats().Sinks["picky"]
	if st.Rejected != 3 || st.Delivered != 9 || st.Errors != 0 || !strings.Contains(st.LastError, evs[11].ID) {
		t.Fatalf("stats %+v: want 3 rejected, 9 delivered, no errors, LastError naming %s", st, evs[11].ID)
	}
	if waits := clk.recorded(); len(waits) != 0 {
		t.Fatalf("refusals waited %v: a refused event is not retried", waits)
	}
}

// TestRefusedEventMarksTheGroup: after a sink refuses a group's event for
// good, the value it keeps of the group is the one before: Refused names
// the group, as of the refused event's time, until the sink stores a later
// event of it, and that event carries Gap in that sink only, in the batch
// in flight as in one published later.
func TestRefusedEventMarksTheGroup(t *testing.T) {
	picky, other := newMem("picky"), newMem("other")
	base := time.Now()
	a, b := seq("/refuse/a", 3, base), seq("/refuse/b", 2, base.Add(time.Second))
	picky.refuse = map[string]bool{a[1].ID: true, b[1].ID: true}
	p := start(t, []Sink{picky, other}, WithBatchSize(8), WithBackoff(time.Millisecond, 8*time.Millisecond))
	if err := p.Publish(context.Background(), append(append([]Event(nil), a...), b...)...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "picky settled", func() bool { return p.Stats().Sinks["picky"].Backlog == 0 })
	if r := p.Refused("picky"); len(r) != 1 || !r["/refuse/b"].Equal(b[1].Time) {
		t.Fatalf("Refused = %v, want /refuse/b as of %v alone (a's refusal is followed by a stored event)", r, b[1].Time)
	}
	if r := p.Refused("other"); len(r) != 0 {
		t.Fatalf("Refused of the sink that stored everything = %v", r)
	}
	later := seq("/refuse/b", 3, base.Add(2*time.Second))[2]
	if err := p.Publish(context.Background(), later); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "picky stores the later event", func() bool { return picky.count() == 4 })
	gaps := map[string]bool{}
	for _, e := range picky.stored() {
		gaps[e.ID] = e.Gap
	}
	if !gaps[a[2].ID] || !gaps[later.ID] || gaps[a[0].ID] || gaps[b[0].ID] {
		t.Fatalf("picky's gap marks %v: want them on %s and %s alone, the events after the refused ones", gaps, a[2].ID, later.ID)
	}
	for _, e := range other.stored() {
		if e.Gap {
			t.Fatalf("the sink that refused nothing got %s marked gap", e.ID)
		}
	}
	if r := p.Refused("picky"); len(r) != 0 {
		t.Fatalf("Refused = %v once a later event of the group is stored, want none", r)
	}
}

// TestRefusedOwnerEventIsNotUndoneByACandidateEvent: a candidate event
// stored after a refused owner change does not bring the sink's owner
// value up to date (the owners bucket and topic take owner events only):
// the group stays refused until an owner event of it is stored. It used
// to be cleared by any stored event, and the heartbeat confirmed the owner
// gone since. A refused candidate event is cleared by the next event.
func TestRefusedOwnerEventIsNotUndoneByACandidateEvent(t *testing.T) {
	picky := newMem("picky")
	base := time.Now()
	owners := seq("/refuse/owner", 3, base)
	joined := func(g string, i int, at time.Time) Event {
		c := fmt.Sprintf("c_%010d", i)
		return Event{
			Type: CandidateJoined, Group: g, Recipe: elect.RecipeElection,
			Owner: owners[0].Owner, Candidate: &Participant{ID: c, Node: c, Sequence: int32(i)},
			Term: 1, Zxid: int64(10 + i), Time: at, Source: "test",
		}.WithID()
	}
	cand := []Event{joined("/refuse/cand", 1, base), joined("/refuse/cand", 2, base)}
	picky.refuse = map[string]bool{owners[1].ID: true, cand[0].ID: true}
	p := start(t, []Sink{picky}, WithBatchSize(8), WithBackoff(time.Millisecond, 8*time.Millisecond))
	evs := []Event{owners[0], owners[1], joined("/refuse/owner", 3, base.Add(time.Second)), cand[0], cand[1]}
	if err := p.Publish(context.Background(), evs...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "picky settled", func() bool { return p.Stats().Sinks["picky"].Backlog == 0 })
	if r := p.Refused("picky"); len(r) != 1 || !r["/refuse/owner"].Equal(owners[1].Time) {
		t.Fatalf("Refused = %v after a candidate event followed the refused owner change: want /refuse/owner alone", r)
	}
	if err := p.Publish(context.Background(), owners[2]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the next owner event stored", func() bool { return picky.count() == 4 })
	if r := p.Refused("picky"); len(r) != 0 {
		t.Fatalf("Refused = %v once an owner event of the group is stored, want none", r)
	}
}

// TestRefusedIsSetBeforeTheRefusalCounts: a heartbeat writes a round once
// the sink has settled (stored, collapsed or refused) what was published
// before it, and then asks Refused which groups not to confirm; so a
// refusal must be in Refused before it counts as settled. It counted
// first, and a heartbeat in between confirmed the group's value before
// the refused event.
func TestRefusedIsSetBeforeTheRefusalCounts(t *testing.T) {
	picky := newMem("picky")
	const n = 20000
	evs := make([]Event, n)
	picky.refuse = map[string]bool{}
	for i := range evs {
		evs[i] = seq(fmt.Sprintf("/refuse/%d", i), 1, time.Now())[0]
		picky.refuse[evs[i].ID] = true
	}
	p := start(t, []Sink{picky}, WithBatchSize(1), WithBackoff(time.Millisecond, 8*time.Millisecond))
	if err := p.Publish(context.Background(), evs...); err != nil {
		t.Fatal(err)
	}
	for {
		rejected := p.Stats().Sinks["picky"].Rejected
		if refused := len(p.Refused("picky")); int64(refused) < rejected {
			t.Fatalf("%d refusals counted settled, %d groups in Refused", rejected, refused)
		}
		if rejected == n {
			return
		}
	}
}

// TestRefusedReadyIsNotUndoneBySameTermSnapshot: a snapshot's owner event
// of the same term stored after a refused leader.ready leaves the sink's
// owner value not ready (the owners bucket keeps a tenure's value and
// takes readiness from a ready alone), so the group stays refused until a
// ready of that term, or an owner event of another, is stored. It used to
// be cleared by the snapshot, and the heartbeat confirmed "not ready".
func TestRefusedReadyIsNotUndoneBySameTermSnapshot(t *testing.T) {
	picky := newMem("picky")
	const g = "/refuse/ready"
	o := &elect.Participant{ID: "o", Node: "o_0000000001", Czxid: 5}
	base := time.Now()
	elected := Translate(elect.Change{Kind: elect.OwnerChanged, Group: g, Recipe: elect.RecipeElection, Owner: o, Zxid: 5}, "test", base)[0]
	ready := Translate(elect.Change{Kind: elect.Ready, Group: g, Recipe: elect.RecipeElection, Owner: o, Zxid: 6}, "test", base.Add(time.Second))[0]
	snap := Translate(elect.Change{Kind: elect.Snapshot, Group: g, Recipe: elect.RecipeElection, Owner: o, Queue: []elect.Participant{*o}, Zxid: 6}, "test", base.Add(2*time.Second))
	picky.refuse = map[string]bool{ready.ID: true}
	p := start(t, []Sink{picky}, WithBatchSize(8), WithBackoff(time.Millisecond, 8*time.Millisecond))
	if err := p.Publish(context.Background(), elected, ready); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "picky settled", func() bool { return p.Stats().Sinks["picky"].Backlog == 0 })
	if len(snap) != 1 || snap[0].Type != LeaderElected {
		t.Fatalf("snapshot %+v: want the owner's event alone (its ready not seen)", snap)
	}
	if err := p.Publish(context.Background(), snap...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the snapshot stored", func() bool { return picky.count() == 2 })
	if r := p.Refused("picky"); len(r) != 1 || !r[g].Equal(ready.Time) {
		t.Fatalf("Refused = %v after a same-term snapshot without its ready: want %s as of the refused ready", r, g)
	}
	again := ready
	again.Time, again.Snapshot = base.Add(3*time.Second), true
	again = again.WithID() // a snapshot's ready: stored this time
	if err := p.Publish(context.Background(), again); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the ready stored", func() bool { return picky.count() == 3 })
	if r := p.Refused("picky"); len(r) != 0 {
		t.Fatalf("Refused = %v once the term's ready is stored, want none", r)
	}
}
