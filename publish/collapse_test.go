package publish

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkherald/herald/elect"
)

// history simulates a group through rounds of owner changes, acks and
// candidate churn, translated the way a bridge would.
func history(group string, recipe elect.Recipe, rounds int, zxid *int64) []Event {
	var out []Event
	now := time.Now()
	var prev *elect.Participant
	mk := func(name string) *elect.Participant {
		*zxid++
		return &elect.Participant{ID: name, Node: name + "_" + fmt.Sprint(*zxid), Session: 1, Sequence: int32(*zxid), Czxid: *zxid}
	}
	emit := func(c elect.Change) {
		*zxid++
		c.Group, c.Recipe, c.Zxid = group, recipe, *zxid
		out = append(out, Translate(c, "sim", now)...)
	}
	var waiting *elect.Participant
	for r := 0; r < rounds; r++ {
		owner := mk(fmt.Sprintf("o%d", r))
		emit(elect.Change{Kind: elect.OwnerChanged, Previous: prev, Owner: owner, Reason: elect.ReasonSessionExpired})
		emit(elect.Change{Kind: elect.Ready, Owner: owner})
		if waiting != nil {
			emit(elect.Change{Kind: elect.Left, Owner: owner, Candidate: waiting})
		}
		waiting = mk(fmt.Sprintf("w%d", r))
		emit(elect.Change{Kind: elect.Joined, Owner: owner, Candidate: waiting})
		prev = owner
	}
	return out
}

func follow(t *testing.T, evs []Event) map[string]OwnerState {
	t.Helper()
	f, err := NewFollower()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		f.Apply(e)
	}
	return f.Current()
}

// owners keeps what an owners view shows: owner node and term per group.
func owners(m map[string]OwnerState) map[string]string {
	out := map[string]string{}
	for g, s := range m {
		o := "<none>"
		if s.Owner != nil {
			o = s.Owner.Node
		}
		out[g] = fmt.Sprintf("%s@%d ready=%v", o, s.Term, s.Ready)
	}
	return out
}

// gathered returns a metric's value by name and sink label.
func gathered(t *testing.T, reg *prometheus.Registry, name, sink string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := sink == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "sink" && l.GetValue() == sink {
					match = true
				}
			}
			if !match {
				continue
			}
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum
}

func TestBacklogBoundCollapses(t *testing.T) {
	for _, lossless := range []bool{false, true} {
		t.Run(fmt.Sprintf("lossless=%v", lossless), func(t *testing.T) {
			s := newMem("bounded")
			release := s.block()
			defer release()
			reg := prometheus.NewRegistry()
			opts := []Option{WithBacklog(100), WithBatchSize(10), WithRegisterer(reg)}
			if lossless {
				opts = append(opts, Lossless("bounded"))
			}
			p := start(t, []Sink{s}, opts...)
			var all []Event
			var zxid int64
			for g := 0; g < 5; g++ {
				all = append(all, history(fmt.Sprintf("/bound/g%d", g), elect.RecipeElection, 40, &zxid)...)
			}
			// Interleave groups the way one observer would publish them.
			for _, e := range interleave(all) {
				if err := p.Publish(context.Background(), e); err != nil {
					t.Fatal(err)
				}
			}
			st := p.Stats().Sinks["bounded"]
			if lossless {
				if st.Collapsed != 0 || st.Backlog != len(all) || st.Bound != 0 {
					t.Fatalf("lossless sink: %+v, want nothing collapsed and %d pending", st, len(all))
				}
			} else if st.Collapsed == 0 || st.Backlog > 200 {
				t.Fatalf("bounded sink: %+v, want collapsing to hold the backlog near 100", st)
			}
			if got := gathered(t, reg, "herald_collapsed_events_total", "bounded"); got != float64(st.Collapsed) {
				t.Fatalf("herald_collapsed_events_total = %v, Stats says %d", got, st.Collapsed)
			}
			if got := gathered(t, reg, "herald_backlog", "bounded"); got != float64(st.Backlog) {
				t.Fatalf("herald_backlog = %v, Stats says %d", got, st.Backlog)
			}
			release()
			want := len(all) - int(st.Collapsed)
			waitFor(t, 5*time.Second, "backlog delivered", func() bool { return s.count() >= want })
			got := s.stored()
			if len(got) != want {
				t.Fatalf("stored %d events, want %d", len(got), want)
			}
			checkSubsequence(t, got, all)
			gaps := 0
			for _, e := range got {
				if e.Gap {
					gaps++
				}
			}
			if lossless != (gaps == 0) {
				t.Fatalf("%d events marked gap (lossless=%v)", gaps, lossless)
			}
			if w, g := owners(follow(t, all)), owners(follow(t, got)); !reflect.DeepEqual(w, g) {
				t.Fatalf("owners view after collapse\n%v\nwant\n%v", g, w)
			}
		})
	}
}

// interleave round-robins events across their groups, keeping each group's order.
func interleave(evs []Event) []Event {
	by := map[string][]Event{}
	var order []string
	for _, e := range evs {
		if by[e.Group] == nil {
			order = append(order, e.Group)
		}
		by[e.Group] = append(by[e.Group], e)
	}
	var out []Event
	for len(out) < len(evs) {
		for _, g := range order {
			if len(by[g]) > 0 {
				out = append(out, by[g][0])
				by[g] = by[g][1:]
			}
		}
	}
	return out
}

// checkSubsequence fails unless, per group, got is a subsequence of all
// (same ids, same relative order: nothing reordered or invented).
func checkSubsequence(t *testing.T, got, all []Event) {
	t.Helper()
	pos := map[string]int{}
	idx := map[string]int{}
	for i, e := range all {
		idx[e.ID] = i
	}
	for _, e := range got {
		i, ok := idx[e.ID]
		if !ok {
			t.Fatalf("stored event %s %s was never published", e.Type, e.ID)
		}
		if last, seen := pos[e.Group]; seen && i <= last {
			t.Fatalf("group %s reordered: event %d after %d", e.Group, i, last)
		}
		pos[e.Group] = i
	}
}

func TestCollapseRules(t *testing.T) {
	var zxid int64
	evs := history("/rules/g", elect.RecipeLock, 5, &zxid)
	out, dropped := collapse(append([]Event(nil), evs...))
	if dropped+len(out) != len(evs) {
		t.Fatalf("kept %d + dropped %d != %d", len(out), dropped, len(evs))
	}
	// Last round: acquired(o4) (its release of o3 dropped), left(w3) kept?
	// w3 joined inside the backlog, so its join and leave both go; w4 stays.
	var types []string
	for _, e := range out {
		if !e.Gap {
			t.Errorf("kept %s without gap", e.Type)
		}
		n := ""
		if e.Candidate != nil {
			n = e.Candidate.ID
		} else if e.Owner != nil {
			n = e.Owner.ID
		}
		types = append(types, string(e.Type)+":"+n)
	}
	want := []string{"lock.acquired:o4", "leader.ready:o4", "candidate.joined:w4"}
	if !reflect.DeepEqual(types, want) {
		t.Fatalf("collapsed to %v, want %v", types, want)
	}
	// A group without anything to drop is left alone.
	one := history("/rules/h", elect.RecipeLock, 1, &zxid)
	if out, dropped := collapse(append([]Event(nil), one...)); dropped != 0 || out[0].Gap {
		t.Fatalf("collapsed a minimal group: dropped %d, %+v", dropped, out)
	}
}
