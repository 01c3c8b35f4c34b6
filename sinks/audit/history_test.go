package audit

import (
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

var h0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func hev(typ publish.Type, owner, prev string, term int64, min int) publish.Event {
	e := publish.Event{Type: typ, Group: "/g", Recipe: elect.RecipeElection, Term: term,
		Time: h0.Add(time.Duration(min) * time.Minute), Source: "t"}
	if owner != "" {
		e.Owner = &publish.Participant{ID: owner, Node: "n_" + owner}
	}
	if prev != "" {
		e.Previous = &publish.Participant{ID: prev, Node: "n_" + prev}
	}
	return e.WithID()
}

func TestHistoryReplacedWithoutLossEndsUnknown(t *testing.T) {
	ts := History([]publish.Event{
		hev(publish.LeaderElected, "a", "", 10, 0),
		hev(publish.LeaderElected, "b", "a", 20, 7),
	})
	if len(ts) != 2 {
		t.Fatalf("%d tenures, want 2: %+v", len(ts), ts)
	}
	if a := ts[0]; a.Owner.ID != "a" || a.Until != h0.Add(7*time.Minute) || a.Reason != elect.ReasonUnknown || a.HeldFor != 7*time.Minute {
		t.Fatalf("first tenure %+v: want a, ended at +7m for an unknown reason", a)
	}
	if b := ts[1]; !b.Open() || b.Gap {
		t.Fatalf("second tenure %+v: want open, no gap (its predecessor is the owner seen)", b)
	}
}

func TestHistoryFlagsHiddenOwners(t *testing.T) {
	lost := hev(publish.LeaderLost, "", "b", 20, 9)
	lost.Gap = true
	ts := History([]publish.Event{
		hev(publish.LeaderElected, "a", "", 10, 0),
		hev(publish.LeaderLost, "", "a", 10, 1),
		// b's election was never seen; its loss says a gap may follow.
		lost,
		hev(publish.LeaderElected, "c", "", 30, 10),
		// d names x as its predecessor, but the last owner seen was c.
		hev(publish.LeaderElected, "d", "x", 40, 12),
	})
	want := []struct {
		id  string
		gap bool
	}{{"a", false}, {"b", true}, {"c", true}, {"d", true}}
	if len(ts) != len(want) {
		t.Fatalf("%d tenures, want %d: %+v", len(ts), len(want), ts)
	}
	for i, w := range want {
		if ts[i].Owner.ID != w.id || ts[i].Gap != w.gap {
			t.Fatalf("tenure %d: owner %s gap %v, want %s gap %v", i, ts[i].Owner.ID, ts[i].Gap, w.id, w.gap)
		}
	}
	if !ts[1].From.IsZero() || ts[1].HeldFor != 0 || ts[1].Until != h0.Add(9*time.Minute) {
		t.Fatalf("tenure known only from its end: %+v: want From zero, HeldFor 0", ts[1])
	}
}

func TestHistoryReadyAndCandidates(t *testing.T) {
	ts := History([]publish.Event{
		hev(publish.CandidateJoined, "", "", 0, 0),
		hev(publish.LeaderElected, "a", "", 10, 1),
		hev(publish.LeaderReady, "a", "", 10, 2),
		hev(publish.LeaderReady, "a", "", 10, 2),
	})
	if len(ts) != 1 || ts[0].Ready != h0.Add(2*time.Minute) || !ts[0].Open() {
		t.Fatalf("tenures %+v: want one open tenure ready at +2m", ts)
	}
}

func TestHistoryEmptySnapshotIsNoTenure(t *testing.T) {
	empty := hev(publish.LeaderLost, "", "", 0, 0)
	empty.Snapshot, empty.Zxid, empty.Reason = true, 5, elect.ReasonUnknown
	later := hev(publish.LeaderLost, "", "", 0, 9)
	later.Snapshot, later.Zxid, later.Reason = true, 25, elect.ReasonUnknown
	later = later.WithID()
	ts := History([]publish.Event{
		empty.WithID(),
		hev(publish.LeaderElected, "a", "", 10, 1),
		// the bridge missed a's loss; its next snapshot finds the group empty
		later,
	})
	if len(ts) != 1 {
		t.Fatalf("%d tenures, want only a's: %+v", len(ts), ts)
	}
	if a := ts[0]; a.Owner.ID != "a" || a.Open() || a.Until != h0.Add(9*time.Minute) || a.Reason != elect.ReasonUnknown {
		t.Fatalf("tenure %+v: want a, ended at +9m for an unknown reason", a)
	}
}
