package publish

import (
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

func ev(t Type, group string, owner, prev string, term, zxid int64) Event {
	p := func(n string) *Participant {
		if n == "" {
			return nil
		}
		return &Participant{ID: n, Node: n}
	}
	e := Event{Type: t, Group: group, Recipe: elect.RecipeElection, Owner: p(owner), Previous: p(prev),
		Term: term, Zxid: zxid, Time: time.Now(), Source: "test"}
	return e.WithID()
}

func TestFollowerVerdicts(t *testing.T) {
	f, err := NewFollower()
	if err != nil {
		t.Fatal(err)
	}
	const g = "/f/g"
	noOwner := func(zxid int64) Event {
		e := ev(LeaderLost, g, "", "", 0, zxid)
		e.Snapshot, e.Reason = true, elect.ReasonUnknown
		return e.WithID()
	}
	steps := []struct {
		name  string
		e     Event
		want  Verdict
		owner string // expected owner after, "" for none
		term  int64
	}{
		{"first owner", ev(LeaderElected, g, "a", "", 10, 10), Applied, "a", 10},
		{"redelivered", ev(LeaderElected, g, "a", "", 10, 10), Duplicate, "a", 10},
		{"ready", ev(LeaderReady, g, "a", "", 10, 11), Applied, "a", 10},
		{"newer owner, loss missed", ev(LeaderElected, g, "b", "a", 20, 21), Applied, "b", 20},
		{"late loss of old term", ev(LeaderLost, g, "b", "a", 10, 21), Stale, "b", 20},
		{"late gain of old term", ev(LeaderElected, g, "z", "", 15, 16), Stale, "b", 20},
		{"late ready of old term", ev(LeaderReady, g, "z", "", 15, 17), Stale, "b", 20},
		{"old empty snapshot", noOwner(19), Stale, "b", 20},
		{"loss of current", ev(LeaderLost, g, "", "b", 20, 30), Applied, "", 20},
		{"gain of ended term", ev(LeaderElected, g, "b2", "", 20, 31), Stale, "", 20},
		{"empty snapshot when empty", noOwner(31), Unchanged, "", 20},
		{"loss of newer term, gain missed", ev(LeaderLost, g, "", "c", 40, 41), Applied, "", 40},
		{"owner from ready alone", ev(LeaderReady, g, "d", "", 50, 51), Applied, "d", 50},
		{"empty snapshot after owner", noOwner(60), Applied, "", 50},
		{"candidate", candidate(g, "w", CandidateJoined), Applied, "", 50},
		{"candidate again", candidate(g, "w", CandidateJoined), Duplicate, "", 50},
		{"invalid", Event{Type: "nope", Group: g, ID: "x"}, Invalid, "", 50},
	}
	for _, s := range steps {
		if got := f.Judge(s.e); got != s.want {
			t.Fatalf("%s: verdict %v, want %v", s.name, got, s.want)
		}
		o, term, ok := f.Owner(g)
		if (s.owner != "") != ok || ok && (o.Node != s.owner || term != s.term) {
			t.Fatalf("%s: owner %v term %d ok %v, want %q@%d", s.name, o, term, ok, s.owner, s.term)
		}
		if st := f.Current()[g]; st.Term != s.term {
			t.Fatalf("%s: Current term %d, want %d", s.name, st.Term, s.term)
		}
	}
}

func candidate(group, node string, t Type) Event {
	e := Event{Type: t, Group: group, Recipe: elect.RecipeElection, Candidate: &Participant{ID: node, Node: node}, Time: time.Now()}
	return e.WithID()
}

func TestFollowerDedupIsBounded(t *testing.T) {
	f, err := NewFollower(WithDedupSize(2))
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := candidate("/d/g", "a", CandidateJoined), candidate("/d/g", "b", CandidateJoined), candidate("/d/g", "c", CandidateJoined)
	for _, e := range []Event{a, b, c} {
		if !f.Apply(e) {
			t.Fatalf("first %s not applied", e.Candidate.Node)
		}
	}
	if f.Apply(c) || f.Apply(b) {
		t.Fatal("recent ids not deduplicated")
	}
	if !f.Apply(a) {
		t.Fatal("the oldest id was not forgotten: the dedup memory is unbounded")
	}
	if _, err := NewFollower(WithDedupSize(0)); err == nil {
		t.Fatal("dedup size 0 accepted")
	}
}

func TestFollowerSameOwnerAfterEviction(t *testing.T) {
	f, _ := NewFollower(WithDedupSize(1))
	e := ev(LockAcquired, "/s/g", "a", "", 7, 7)
	f.Apply(e)
	f.Apply(candidate("/s/g", "x", CandidateJoined)) // evicts e's id
	if v := f.Judge(e); v != Unchanged {
		t.Fatalf("same owner again after eviction: %v, want unchanged", v)
	}
}

// TestFollowerHazard: the state carries the hazard the group's latest
// event reports about the owner's tenure; a re-statement of the same owner
// that only changes it is applied, an older one is not.
func TestFollowerHazard(t *testing.T) {
	f, err := NewFollower()
	if err != nil {
		t.Fatal(err)
	}
	const g = "/f/h"
	with := func(e Event, h string, id string) Event { e.Hazard, e.ID = h, id; return e }
	joined := candidate(g, "k", CandidateJoined)
	joined.Owner, joined.Term, joined.Zxid, joined.Hazard = &Participant{ID: "a", Node: "a"}, 10, 12, "k cannot read a"
	steps := []struct {
		name   string
		e      Event
		want   Verdict
		hazard string
	}{
		{"owner", ev(LeaderElected, g, "a", "", 10, 10), Applied, ""},
		{"a candidate brings it", joined.WithID(), Applied, "k cannot read a"},
		{"the owner restated with it", with(ev(LeaderElected, g, "a", "", 10, 12), "k cannot read a", "r1"), Unchanged, "k cannot read a"},
		{"restated without it", with(ev(LeaderElected, g, "a", "", 10, 13), "", "r2"), Applied, ""},
		{"an older restatement", with(ev(LeaderElected, g, "a", "", 10, 11), "old", "r3"), Unchanged, ""},
		{"ready with it", with(ev(LeaderReady, g, "a", "", 10, 14), "h2", "r4"), Applied, "h2"},
		{"ready again without it", with(ev(LeaderReady, g, "a", "", 10, 15), "", "r5"), Applied, ""},
		{"a new owner with none", ev(LeaderElected, g, "b", "a", 20, 20), Applied, ""},
	}
	for _, s := range steps {
		if got := f.Judge(s.e); got != s.want {
			t.Fatalf("%s: verdict %v, want %v", s.name, got, s.want)
		}
		if st := f.Current()[g]; st.Hazard != s.hazard {
			t.Fatalf("%s: hazard %q, want %q", s.name, st.Hazard, s.hazard)
		}
	}
}

// TestFollowerGapWithoutOwner: a snapshot finding no owner with Gap set is
// news even when the follower already knows the group has none: owners
// may have come and gone unseen since. A consumer (herald tail) must get
// it; the same gap again, or one older than the last owner, it need not.
func TestFollowerGapWithoutOwner(t *testing.T) {
	f, err := NewFollower()
	if err != nil {
		t.Fatal(err)
	}
	const g = "/f/gap"
	empty := func(zxid int64, gap bool) Event {
		e := ev(LockReleased, g, "", "", 0, zxid)
		e.Snapshot, e.Gap, e.Reason = true, gap, elect.ReasonUnknown
		return e.WithID()
	}
	steps := []struct {
		name string
		e    Event
		want Verdict
		gap  bool
	}{
		{"owner", ev(LockAcquired, g, "f", "", 633, 633), Applied, false},
		{"its release, seen", ev(LockReleased, g, "", "f", 633, 634), Applied, false},
		{"empty, nothing changed", empty(634, false), Unchanged, false},
		{"empty with a gap: g and h came and went unseen", empty(640, true), Applied, true},
		{"the same gap from another bridge", func() Event { e := empty(640, true); e.ID = "other"; return e }(), Unchanged, true},
		{"a gap older than the last owner", func() Event { e := empty(600, true); e.ID = "old"; return e }(), Stale, true},
		{"a later gap", empty(650, true), Applied, true},
	}
	for _, s := range steps {
		if got := f.Judge(s.e); got != s.want {
			t.Fatalf("%s: verdict %v, want %v", s.name, got, s.want)
		}
		st := f.Current()[g]
		if (st.Owner != nil) != (s.name == "owner") || st.Gap != s.gap || st.Term != 633 {
			t.Fatalf("%s: state %+v, want term 633, gap %v", s.name, st, s.gap)
		}
	}
}

// TestFollowerFirstWordIsNoOwner: the first event of a group the follower
// never saw is news even when it says nobody owns the group (a reader then
// shows the group); the same state again is not.
func TestFollowerFirstWordIsNoOwner(t *testing.T) {
	f, _ := NewFollower()
	const g = "/f/empty"
	noOwner := func(zxid int64, id string) Event {
		e := ev(LockReleased, g, "", "", 0, zxid)
		e.Snapshot, e.Reason, e.Recipe = true, elect.ReasonUnknown, elect.RecipeLock
		e = e.WithID()
		e.ID += id
		return e
	}
	if v := f.Judge(noOwner(40, "a")); v != Applied {
		t.Fatalf("first word of a group, no owner: %v, want applied", v)
	}
	if v := f.Judge(noOwner(40, "b")); v != Unchanged {
		t.Fatalf("the same no-owner state again: %v, want unchanged", v)
	}
	if v := f.Judge(ev(LockAcquired, g, "a", "", 45, 45)); v != Applied {
		t.Fatalf("an owner after the empty snapshot: %v, want applied", v)
	}
}

// A group without an owner whose note changes (a node at a leader's path
// not taken for a leader's appeared, or went) is news: the state takes the
// note, and a reader of the Kafka owners topic, which delivers what its
// follower applies, says why nobody owns. The same note again is not.
func TestFollowerNoteWithoutOwner(t *testing.T) {
	f, err := NewFollower()
	if err != nil {
		t.Fatal(err)
	}
	const g = "/f/note"
	const why = "/f/note is not taken for a leader's node, so nobody holds it: persistent (no session holds it)"
	empty := func(zxid int64, note string) Event {
		e := ev(LeaderLost, g, "", "", 0, zxid)
		e.Snapshot, e.Reason, e.Note, e.Source = true, elect.ReasonUnknown, note, "b"
		return e.WithID()
	}
	for _, s := range []struct {
		name string
		e    Event
		want Verdict
		note string
	}{
		{"owner", ev(LeaderElected, g, "f", "", 633, 633), Applied, ""},
		{"its loss, seen", ev(LeaderLost, g, "", "f", 633, 634), Applied, ""},
		{"a node not taken for a leader's appears", empty(640, why), Applied, why},
		{"the same, restated", empty(641, why), Unchanged, why},
		{"an older view without it", empty(635, ""), Unchanged, why},
		{"it goes", empty(650, ""), Applied, ""},
	} {
		if got := f.Judge(s.e); got != s.want {
			t.Fatalf("%s: verdict %v, want %v", s.name, got, s.want)
		}
		if st := f.Current()[g]; st.Note != s.note {
			t.Fatalf("%s: note %q, want %q", s.name, st.Note, s.note)
		}
	}
}
