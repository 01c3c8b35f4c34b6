package jetstream

import (
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

func gain(node string, term int64) publish.Event {
	return publish.Event{Type: publish.LeaderElected, Group: "/g", Recipe: elect.RecipeElection,
		Owner: &publish.Participant{ID: node, Node: node}, Term: term, Zxid: term + 1, Time: time.Unix(term, 0)}.WithID()
}

func ready(node string, term int64) publish.Event {
	e := gain(node, term)
	e.Type = publish.LeaderReady
	return e.WithID()
}

func loss(node string, term int64, successor string) publish.Event {
	e := publish.Event{Type: publish.LeaderLost, Group: "/g", Recipe: elect.RecipeElection,
		Previous: &publish.Participant{ID: node, Node: node}, Term: term, Zxid: term + 5}
	if successor != "" {
		e.Owner = &publish.Participant{ID: successor, Node: successor}
	}
	return e.WithID()
}

func emptySnapshot(zxid int64) publish.Event {
	return publish.Event{Type: publish.LeaderLost, Group: "/g", Recipe: elect.RecipeElection, Zxid: zxid, Snapshot: true}.WithID()
}

func TestStep(t *testing.T) {
	owner := func(v view) string {
		if v.owner == nil {
			return "-"
		}
		s := v.owner.Owner.Node
		if v.owner.Ready {
			s += "+ready"
		}
		return s
	}
	for _, c := range []struct {
		name string
		evs  []publish.Event
		want string
	}{
		{"elected", []publish.Event{gain("a", 10)}, "a"},
		{"ready merges into its term", []publish.Event{gain("a", 10), ready("a", 10)}, "a+ready"},
		{"snapshot gain keeps ready", []publish.Event{gain("a", 10), ready("a", 10), gain("a", 10)}, "a+ready"},
		{"ready alone names the owner", []publish.Event{ready("a", 10)}, "a+ready"},
		{"higher term replaces", []publish.Event{gain("a", 10), ready("a", 10), gain("b", 20)}, "b"},
		{"lower term is stale", []publish.Event{gain("b", 20), gain("a", 10)}, "b"},
		{"lost with no successor clears", []publish.Event{gain("a", 10), loss("a", 10, "")}, "-"},
		{"lost with successor waits for the gain", []publish.Event{gain("a", 10), loss("a", 10, "b")}, "a"},
		{"lost of an older term keeps the owner", []publish.Event{gain("b", 20), loss("a", 10, "")}, "b"},
		{"gone owner does not come back", []publish.Event{gain("a", 10), loss("a", 10, ""), gain("a", 10)}, "-"},
		{"new owner after a loss", []publish.Event{gain("a", 10), loss("a", 10, ""), gain("b", 20)}, "b"},
		{"empty snapshot after the owner's node", []publish.Event{gain("a", 10), emptySnapshot(15)}, "-"},
		{"empty snapshot before the owner's node", []publish.Event{gain("a", 10), emptySnapshot(5)}, "a"},
		{"candidate events change nothing", []publish.Event{gain("a", 10), {Type: publish.CandidateJoined, Group: "/g", Term: 10}}, "a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := view{}
			for _, e := range c.evs {
				v = step(v, e)
			}
			if got := owner(v); got != c.want {
				t.Fatalf("owner %s, want %s", got, c.want)
			}
		})
	}
}

func TestStepSameTermKeepsSince(t *testing.T) {
	first := gain("a", 10)
	again := gain("a", 10)
	again.Time = first.Time.Add(time.Hour)
	v := step(step(view{}, first), again)
	if !v.owner.Since.Equal(first.Time) {
		t.Fatalf("since %v, want the first report %v", v.owner.Since, first.Time)
	}
	if !same(step(view{}, first), v) {
		t.Fatal("re-reporting the same owner must not count as a change")
	}
}

// TestStepSinceUnseen: an owner first reported by a snapshot has a Since
// that bounds its tenure's start from above only (SinceUnseen), kept while
// the term lasts; one first reported by a change has not.
func TestStepSinceUnseen(t *testing.T) {
	snap := gain("a", 10)
	snap.Snapshot = true
	v := step(view{}, snap.WithID())
	if !v.owner.SinceUnseen {
		t.Fatal("an owner first reported by a snapshot: SinceUnseen false")
	}
	if v = step(v, ready("a", 10)); !v.owner.SinceUnseen || !v.owner.Ready {
		t.Fatalf("ready in the same term: %+v, want SinceUnseen kept", *v.owner)
	}
	if v = step(v, gain("b", 20)); v.owner.SinceUnseen {
		t.Fatal("an owner first reported by a change: SinceUnseen true")
	}
}

// TestStepHazard: the value carries the hazard the group's latest event
// reports about the owner's tenure, written again when only that changes;
// an older event, or one about another term, leaves it.
func TestStepHazard(t *testing.T) {
	cand := func(zxid int64, hazard string) publish.Event {
		return publish.Event{Type: publish.CandidateJoined, Group: "/g", Recipe: elect.RecipeElection,
			Owner: &publish.Participant{ID: "a", Node: "a"}, Candidate: &publish.Participant{ID: "k", Node: "k"},
			Term: 10, Zxid: zxid, Hazard: hazard}.WithID()
	}
	withHazard := func(e publish.Event, h string) publish.Event { e.Hazard = h; return e }
	other := cand(30, "h")
	other.Owner, other.Term = &publish.Participant{ID: "b", Node: "b"}, 20
	for _, c := range []struct {
		name  string
		evs   []publish.Event
		want  string
		wrote bool // the last event changed the value
	}{
		{"a gain carries it", []publish.Event{withHazard(gain("a", 10), "h")}, "h", true},
		{"a client joins that cannot read the owner's node", []publish.Event{gain("a", 10), cand(20, "h")}, "h", true},
		{"it leaves", []publish.Event{gain("a", 10), cand(20, "h"), cand(21, "")}, "", true},
		{"an older event", []publish.Event{gain("a", 10), cand(20, "h"), cand(15, "")}, "h", false},
		{"the same hazard again", []publish.Event{gain("a", 10), cand(20, "h"), cand(22, "h")}, "h", false},
		{"ready keeps it", []publish.Event{gain("a", 10), cand(20, "h"), ready("a", 10)}, "h", true},
		{"a snapshot clears it", []publish.Event{gain("a", 10), cand(20, "h"), withHazard(func() publish.Event { e := gain("a", 10); e.Zxid = 25; return e }(), "")}, "", true},
		{"an event of another term", []publish.Event{gain("a", 10), other}, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var before, v view
			for _, e := range c.evs {
				before, v = v, step(v, e)
			}
			if v.owner == nil || v.owner.Hazard != c.want {
				t.Fatalf("owner %+v; want a with hazard %q", v.owner, c.want)
			}
			if wrote := !same(before, v); wrote != c.wrote {
				t.Fatalf("the last event changed the value: %v, want %v", wrote, c.wrote)
			}
		})
	}
}

// With no owner, why nobody holds the group (the event's note) is written
// when it changes, and kept while another bridge restates the marker; an
// older event does not undo it.
func TestStepKeepsWhyNobodyOwns(t *testing.T) {
	const why = "/g is not taken for a leader's node, so nobody holds it: persistent (no session holds it)"
	noted := func(zxid int64, note, src string) publish.Event {
		e := emptySnapshot(zxid)
		e.Note, e.Source = note, src
		return e.WithID()
	}
	v := step(view{}, gain("a", 10))
	v = step(v, loss("a", 10, ""))
	if v.note != "" || v.owner != nil {
		t.Fatalf("after the loss: %+v", v)
	}
	w := step(v, noted(20, why, "b1"))
	if w.note != why || same(v, w) {
		t.Fatalf("a node not taken for a leader's appeared: %+v; want the note, written", w)
	}
	if x := step(w, noted(21, why, "b2")); x.note != why || x.source != "b2" {
		t.Fatalf("restated by another bridge: %+v; want the note kept, confirmed by b2", x)
	}
	if x := step(w, noted(15, "", "b1")); x.note != why {
		t.Fatalf("an older event without the note: %+v; want the note kept", x)
	}
	if x := step(w, noted(30, "", "b1")); x.note != "" || same(w, x) {
		t.Fatalf("the node went: %+v; want no note, written", x)
	}
}
