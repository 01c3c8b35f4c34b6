package timeline

import (
	"fmt"
	"reflect"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

// A Builder fed a batch of groups at a time draws what Build and
// BuildWindow draw from every event at once: the same lines and the same
// axis, whatever the batches, with or without a window, also where a
// group's first row is a stretch of missing owners drawn from the chart's
// start, which only the earliest batch knows.
func TestBuilderDrawsWhatBuildDraws(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	in := func(g string, shift int, evs ...publish.Event) []publish.Event {
		var out []publish.Event
		for _, e := range evs {
			e.Group = g
			e.Time = e.Time.Add(time.Duration(shift) * time.Second)
			node := ""
			switch {
			case e.Owner != nil:
				node = e.Owner.Node
			case e.Previous != nil:
				node = e.Previous.Node
			}
			e.ID = publish.MakeID(g, node, e.Type)
			out = append(out, e)
		}
		return out
	}
	story := []publish.Event{
		ev(0, publish.LeaderElected, "a", "", 1, false, false),
		ev(10*time.Second, publish.LeaderLost, "", "a", 1, false, false),
		ev(10*time.Second, publish.LeaderElected, "b", "a", 2, false, false),
		ev(40*time.Second, publish.LeaderElected, "c", "", 4, true, true),
		ev(60*time.Second, publish.LeaderLost, "", "c", 4, false, false),
		ev(60*time.Second, publish.LeaderElected, "d", "c", 5, false, false),
	}
	joined := ev(30*time.Second, publish.CandidateJoined, "", "", 0, false, false)
	joined.Candidate = &publish.Participant{ID: "j", Node: "j"}
	empty := ev(25*time.Second, publish.LeaderLost, "", "", 0, true, true) // owners may be missing, since ?
	var events []publish.Event
	events = append(events, in("/a", 0, story...)...)
	events = append(events, in("/b", -30, story...)...) // the earliest events
	events = append(events, in("/c", 50, append([]publish.Event{empty}, story...)...)...)
	events = append(events, in("/d", 0, joined)...)
	events = append(events, in("/e", 100, story...)...)
	byGroup := map[string][]publish.Event{}
	var groups []string
	for _, e := range events {
		if byGroup[e.Group] == nil {
			groups = append(groups, e.Group)
		}
		byGroup[e.Group] = append(byGroup[e.Group], e)
	}
	sort.Strings(groups)
	last := at(160)
	for _, size := range []int{1, 2, 5} {
		batches := func(b *Builder, keep func(audit.Tenure) bool) {
			for i := 0; i < len(groups); i += size {
				var evs []publish.Event
				for _, g := range groups[i:min(i+size, len(groups))] {
					evs = append(evs, byGroup[g]...)
				}
				b.Add(evs, audit.History(evs), keep)
			}
		}
		b := NewBuilder()
		batches(b, nil)
		if got, want := b.Chart(), Build(events, last, nil); !reflect.DeepEqual(got, want) {
			t.Errorf("batches of %d groups, no window:\n%+v\nwant\n%+v", size, got, want)
		}
		for _, w := range []struct{ now, from, to time.Time }{
			{at(160), at(30), at(70)}, {at(160), time.Time{}, at(20)}, {at(300), at(250), time.Time{}}, {at(160), at(400), at(500)},
		} {
			keep := func(x audit.Tenure) bool {
				return (w.to.IsZero() || !x.From.After(w.to)) && (w.from.IsZero() || x.Open() || !x.Until.Before(w.from))
			}
			b := NewWindowBuilder(w.now, w.from, w.to)
			batches(b, keep)
			if got, want := b.Chart(), BuildWindow(events, audit.History(events), w.now, w.from, w.to, keep); !reflect.DeepEqual(got, want) {
				t.Errorf("batches of %d groups, window %v to %v:\n%+v\nwant\n%+v", size, w.from, w.to, got, want)
			}
		}
	}
}

// A window builder holds the rows it draws, not the batch's: a group of
// 100,000 tenures of which a window shows one leaves a few rows' worth of
// heap behind once its batch is done.
func TestBuilderHoldsOnlyWhatItDraws(t *testing.T) {
	const n = 100_000
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	events := make([]publish.Event, 0, n)
	for i := range n {
		prev := ""
		if i > 0 {
			prev = fmt.Sprint("o", i-1)
		}
		e := ev(time.Duration(i)*time.Second, publish.LeaderElected, fmt.Sprint("o", i), prev, int64(i+1), false, false)
		e.ID = fmt.Sprint(i)
		events = append(events, e)
	}
	ts := audit.History(events)
	mid := t0.Add(n / 2 * time.Second)
	b := NewWindowBuilder(t0.Add(n*time.Second), mid, mid.Add(time.Second/2))
	b.Add(events, ts, func(x audit.Tenure) bool { return !x.From.After(mid.Add(time.Second/2)) && !x.Until.Before(mid) })
	events, ts = nil, nil
	held := int64(heap()) - int64(before)
	c := b.Chart()
	if len(c.Lines) != 1 || len(c.Lines[0].Tenures) == 0 || len(c.Lines[0].Tenures) > 2 {
		t.Fatalf("the window's chart: %+v, want one line of a row or two", c.Lines)
	}
	if held > 1<<20 {
		t.Errorf("the builder holds %d bytes after a batch of %d rows of which it draws %d: want its rows' worth, not the batch's", held, n, len(c.Lines[0].Tenures))
	}
}
