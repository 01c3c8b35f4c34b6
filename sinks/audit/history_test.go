package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
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
		// b's election was never seen; its loss, leaving nobody, says
		// owners may have come and gone before it: a row of its own.
		lost,
		hev(publish.LeaderElected, "c", "", 30, 10),
		// d names x as its predecessor, but the last owner seen was c.
		hev(publish.LeaderElected, "d", "x", 40, 12),
	})
	want := []struct {
		id      string
		gap     bool
		missing bool
	}{{"a", false, false}, {"b", true, false}, {"", true, true}, {"c", false, false}, {"d", true, false}}
	if len(ts) != len(want) {
		t.Fatalf("%d tenures, want %d: %+v", len(ts), len(want), ts)
	}
	for i, w := range want {
		if ts[i].Owner.ID != w.id || ts[i].Gap != w.gap || ts[i].Missing != w.missing {
			t.Fatalf("tenure %d: owner %q gap %v missing %v, want %q gap %v missing %v", i, ts[i].Owner.ID, ts[i].Gap, ts[i].Missing, w.id, w.gap, w.missing)
		}
	}
	if m := ts[2]; m.From != h0.Add(time.Minute) || m.Until != h0.Add(9*time.Minute) {
		t.Fatalf("missing owners %+v: want from +1m (a's loss, the last observation) until +9m", m)
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

// A tenure during which an event carried the group's hazard (a client
// that cannot order the owner's node joined) may have had a second owner;
// the tenures before and after it did not, and the flag shows in the
// table and the JSON.
func TestHistoryTwoOwnersPossible(t *testing.T) {
	joined := hev(publish.CandidateJoined, "b", "", 20, 6)
	joined.Candidate, joined.Hazard = &publish.Participant{ID: "kazoo", Node: "k__lock__0000000003"}, "Kazoo cannot read n_b below it"
	joined = joined.WithID()
	ts := History([]publish.Event{
		hev(publish.LeaderElected, "a", "", 10, 0),
		hev(publish.LeaderElected, "b", "a", 20, 5),
		joined,
		hev(publish.LeaderElected, "c", "b", 30, 9),
	})
	if len(ts) != 3 || ts[0].TwoOwners || !ts[1].TwoOwners || ts[2].TwoOwners {
		t.Fatalf("tenures %+v: want only b's marked two owners possible", ts)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, ts, h0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if !strings.HasSuffix(lines[0], "TWO OWNERS") || !strings.HasSuffix(lines[2], "possible") || strings.HasSuffix(lines[1], "possible") {
		t.Fatalf("table:\n%s", buf.String())
	}
	b, err := json.Marshal(ts[1])
	if err != nil || !strings.Contains(string(b), `"two_owners_possible":true`) {
		t.Fatalf("JSON %s (%v): want two_owners_possible", b, err)
	}
	var back Tenure
	if err := json.Unmarshal(b, &back); err != nil || !back.TwoOwners {
		t.Fatalf("JSON round trip: %+v (%v)", back, err)
	}
}

// A snapshot saying nobody owns the group is no tenure of its own; the
// tenure it finds gone ended at a moment the log did not observe: it is
// given as ending when last seen held, marked, never at the snapshot.
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
	a := ts[0]
	if a.Owner.ID != "a" || a.Open() || a.Until != h0.Add(time.Minute) || a.UntilSeen || a.Reason != "" || a.Exact() {
		t.Fatalf("tenure %+v: want a, until ≥ +1m (last seen), end not seen", a)
	}
	if a.HeldFor != 0 {
		t.Fatalf("a held for %v: only the instant it was seen, not up to the snapshot", a.HeldFor)
	}
}

// lev is a lock event at second sec (so holds of 0.2 s are expressible).
func lev(typ publish.Type, owner, prev string, term, zxid int64, ms int, snap bool) publish.Event {
	e := publish.Event{Type: typ, Group: "/l", Recipe: elect.RecipeLock, Term: term, Zxid: zxid,
		Time: h0.Add(time.Duration(ms) * time.Millisecond), Source: "t", Snapshot: snap}
	if owner != "" {
		e.Owner = &publish.Participant{ID: owner, Node: "lock-" + owner}
	}
	if prev != "" {
		e.Previous = &publish.Participant{ID: prev, Node: "lock-" + prev}
	}
	if typ.Loses() && e.Reason == "" {
		e.Reason = elect.ReasonUnknown
	}
	return e.WithID()
}

// joined is candidate.joined of cand while owner holds (term of owner).
func joined(owner, cand string, term, zxid int64, ms int) publish.Event {
	e := lev(publish.CandidateJoined, owner, "", term, zxid, ms, false)
	e.Candidate = &publish.Participant{ID: cand, Node: "lock-" + cand}
	return e.WithID()
}

// The case: a bridge's own log with a hole (it stood by, or was
// down). c held the lock 0.2 s, then the bridge was away for 20 s; its
// snapshot shows d. c's tenure is not stretched to 20 s: it ends when c was
// last seen holding, marked, and d's start is marked unseen with a gap.
func TestHistoryHoleIsNotCountedAsHeld(t *testing.T) {
	ts := History([]publish.Event{
		lev(publish.LockAcquired, "c", "", 100, 100, 0, false),
		joined("c", "x", 100, 101, 150),
		// hole: c released at ~200 ms, unseen; x and d held meanwhile
		lev(publish.LockAcquired, "d", "", 130, 140, 20000, true),
		lev(publish.LockReleased, "", "d", 130, 150, 20300, false),
	})
	if len(ts) != 2 {
		t.Fatalf("%d tenures, want c and d: %+v", len(ts), ts)
	}
	c, d := ts[0], ts[1]
	if c.Owner.ID != "c" || c.UntilSeen || c.Until != h0.Add(150*time.Millisecond) || c.HeldFor != 150*time.Millisecond || c.Exact() {
		t.Fatalf("c %+v: want until ≥ +150ms (last seen, the join), held ≥ 150ms, not exact", c)
	}
	if !c.FromSeen || c.Gap {
		t.Fatalf("c %+v: its start was seen and nothing hides before it", c)
	}
	if d.Owner.ID != "d" || d.FromSeen || !d.Gap || !d.UntilSeen || d.HeldFor != 300*time.Millisecond || d.Exact() {
		t.Fatalf("d %+v: want from ≤ +20s (first seen), gap, until seen, held ≥ 300ms", d)
	}
}

// A snapshot that re-states the owner (a restart while it held) proves it
// held across the stretch: its node existed throughout. Its seen loss then
// makes the tenure exact; a later snapshot of another owner ends it at the
// restatement, not before. The restatement is a sighting with an id of its
// own (another bridge's, or the same bridge's after later changes); under
// its change's id (as herald gave it before) it tells the same.
func TestHistoryRestatedOwnerWasHeldThroughout(t *testing.T) {
	gain := lev(publish.LockAcquired, "a", "", 10, 10, 0, false)
	sighting := lev(publish.LockAcquired, "a", "", 10, 12, 5000, true)
	if sighting.ID == gain.ID || sighting.WithChangeID().ID != gain.ID {
		t.Fatal("a restatement is a sighting with an id of its own, of the change's")
	}
	for _, restated := range []publish.Event{sighting, sighting.WithChangeID()} {
		ts := History([]publish.Event{gain, restated, lev(publish.LockReleased, "", "a", 10, 20, 6000, false)})
		if len(ts) != 1 || !ts[0].Exact() || ts[0].HeldFor != 6*time.Second || ts[0].Gap {
			t.Fatalf("tenures %+v: want one exact 6 s tenure", ts)
		}
		ts = History([]publish.Event{gain, restated, lev(publish.LockAcquired, "b", "", 30, 30, 9000, true)})
		if len(ts) != 2 || ts[0].UntilSeen || ts[0].Until != h0.Add(5*time.Second) || !ts[1].Gap || ts[1].FromSeen {
			t.Fatalf("tenures %+v: want a until ≥ +5s (its restatement), b from ≤ +9s with a gap", ts)
		}
	}
}

// A gain that names a previous owner other than the one last seen (the
// log lost events) ends the last one unseen; a gain naming it ends it seen.
func TestHistoryGainNamingAnotherPrevious(t *testing.T) {
	ts := History([]publish.Event{
		lev(publish.LockAcquired, "a", "", 10, 10, 0, false),
		lev(publish.LockAcquired, "c", "b", 30, 40, 4000, false),
		lev(publish.LockAcquired, "d", "c", 50, 50, 5000, false),
	})
	if len(ts) != 3 {
		t.Fatalf("%d tenures: %+v", len(ts), ts)
	}
	if a := ts[0]; a.UntilSeen || a.Until != h0 || a.Reason != "" {
		t.Fatalf("a %+v: want until ≥ +0 (never seen after its gain), end not seen", a)
	}
	if c := ts[1]; !c.Gap || !c.Exact() || c.Reason != elect.ReasonUnknown || c.HeldFor != time.Second {
		t.Fatalf("c %+v: want gap (b hid before it), exact 1 s, replaced for an unknown reason", c)
	}
	if d := ts[2]; d.Gap || !d.Open() {
		t.Fatalf("d %+v: want open, no gap", d)
	}
}

// A history whose first event is a change of owner (a log whose older
// part is gone) names an owner before it that no row shows: the new
// owner's row carries the gap, where it read as following nobody.
func TestHistoryFirstGainNamingAPreviousIsAGap(t *testing.T) {
	ts := History([]publish.Event{
		hev(publish.LeaderElected, "b", "a", 20, 7),
		hev(publish.LeaderLost, "", "b", 20, 9),
	})
	if len(ts) != 1 || ts[0].Owner.ID != "b" || !ts[0].Gap {
		t.Fatalf("tenures %+v: want b's, marked with a gap for a, its unseen predecessor", ts)
	}
	ts = History([]publish.Event{hev(publish.LeaderElected, "b", "", 20, 7)})
	if len(ts) != 1 || ts[0].Gap {
		t.Fatalf("tenures %+v: want b's without a gap: nobody owned before it", ts)
	}
}

// From a store that dropped its oldest events, a group whose first stored
// event is a change lost the events before it (a bridge's first event of
// a group is a snapshot): the tenure that change starts, or the owner a
// candidate's event names, is marked; a first snapshot, and the owner
// after a first loss seen, are not. History, for a store that kept every
// event, marks none of them.
func TestHistoryTrimmedMarksAFirstChange(t *testing.T) {
	snap := lev(publish.LockAcquired, "a", "", 10, 10, 0, true)
	cases := []struct {
		name string
		evs  []publish.Event
		gaps []bool // HistoryTrimmed's rows' Gap, in order
	}{
		{"gain first", []publish.Event{lev(publish.LockAcquired, "b", "", 20, 20, 0, false)}, []bool{true}},
		{"candidate first", []publish.Event{joined("b", "x", 20, 21, 0)}, []bool{true}},
		{"snapshot first", []publish.Event{snap, lev(publish.LockReleased, "", "a", 10, 15, 5, false), lev(publish.LockAcquired, "b", "", 20, 20, 9, false)}, []bool{false, false}},
		{"loss first", []publish.Event{lev(publish.LockReleased, "", "a", 10, 15, 0, false), lev(publish.LockAcquired, "b", "", 20, 20, 9, false)}, []bool{true, false}},
	}
	for _, c := range cases {
		var got []bool
		for _, r := range HistoryTrimmed(c.evs) {
			got = append(got, r.Gap)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.gaps) {
			t.Errorf("%s: HistoryTrimmed's gaps %v, want %v", c.name, got, c.gaps)
		}
		if c.name != "loss first" {
			for _, r := range History(c.evs) {
				if r.Gap {
					t.Errorf("%s: History marks %+v, from a store that kept every event", c.name, r)
				}
			}
		}
	}
}

// An open tenure is counted to the last time it was seen holding, not to
// the time the history is read.
func TestHistoryOpenTenureCountsWhatWasSeen(t *testing.T) {
	ts := History([]publish.Event{
		lev(publish.LockAcquired, "a", "", 10, 10, 0, false),
		joined("a", "b", 10, 11, 700),
	})
	if len(ts) != 1 || !ts[0].Open() || ts[0].LastSeen != h0.Add(700*time.Millisecond) || ts[0].HeldFor != 700*time.Millisecond || ts[0].Exact() {
		t.Fatalf("tenures %+v: want one open tenure seen held for 700ms", ts)
	}
}

// Two bridges' logs (HA: each has holes while the other was active) merge
// into one history that is exact wherever either saw the change, whatever
// order the logs are given in; each id counts once.
func TestMergeTwoLogs(t *testing.T) {
	// bridge 1 saw a elected and b join, then died.
	log1 := []publish.Event{
		lev(publish.LockAcquired, "a", "", 10, 10, 0, false),
		joined("a", "b", 10, 11, 100),
	}
	// bridge 2 stood by from the start and, on taking over, published
	// what it held: its snapshot (a), then a's release and b's gain.
	snapA := lev(publish.LockAcquired, "a", "", 10, 11, 50, true)
	log2 := []publish.Event{
		snapA,
		lev(publish.LockReleased, "b", "a", 10, 20, 400, false),
		lev(publish.LockAcquired, "b", "a", 15, 20, 400, false),
	}
	// bridge 1 came back as a standby, took over again later and
	// published its snapshot (b) and b's release.
	log1 = append(log1,
		lev(publish.LockAcquired, "b", "", 15, 21, 2000, true),
		lev(publish.LockReleased, "", "b", 15, 30, 2500, false),
	)

	one := History(log1)
	if len(one) != 2 || one[0].UntilSeen || one[0].Until != h0.Add(100*time.Millisecond) || one[1].FromSeen || !one[1].Gap {
		t.Fatalf("bridge 1 alone: %+v: want a until ≥ +100ms, b from ≤ +2s with a gap", one)
	}
	two := History(log2)
	if len(two) != 2 || two[0].FromSeen || !two[0].UntilSeen || !two[1].FromSeen || !two[1].Open() {
		t.Fatalf("bridge 2 alone: %+v: want a from ≤ (snapshot) until seen, b seen elected and open", two)
	}
	for _, merged := range [][]publish.Event{Merge(log1, log2), Merge(log2, log1), Merge(log1, log2, log1)} {
		ts := History(merged)
		if len(ts) != 2 {
			t.Fatalf("merged: %d tenures, want 2: %+v", len(ts), ts)
		}
		a, b := ts[0], ts[1]
		if !a.Exact() || a.HeldFor != 400*time.Millisecond || a.Gap {
			t.Fatalf("merged a %+v: want exact 400ms, no gap", a)
		}
		if !b.Exact() || b.HeldFor != 2100*time.Millisecond || b.Gap || b.LastSeen != h0.Add(2*time.Second) {
			t.Fatalf("merged b %+v: want exact 2.1s, no gap, last seen at the restatement", b)
		}
	}
	if n := len(Merge(log1, log1)); n != len(log1) {
		t.Fatalf("a log merged with itself has %d events, want %d", n, len(log1))
	}
}

// After a seen release left the group empty, a snapshot showing an owner
// follows a stretch nobody observed: an owner may have come and gone.
func TestHistorySnapshotAfterEmptyStretchIsAGap(t *testing.T) {
	ts := History([]publish.Event{
		lev(publish.LockAcquired, "a", "", 10, 10, 0, false),
		lev(publish.LockReleased, "", "a", 10, 20, 500, false),
		lev(publish.LockAcquired, "c", "", 40, 50, 9000, true),
	})
	if len(ts) != 2 || !ts[0].Exact() || ts[0].Gap || !ts[1].Gap || ts[1].FromSeen {
		t.Fatalf("tenures %+v: want a exact, c from ≤ +9s with a gap (b may have held in between)", ts)
	}
	// The first snapshot of a group follows nothing: no gap.
	ts = History([]publish.Event{lev(publish.LockAcquired, "c", "", 40, 50, 9000, true)})
	if len(ts) != 1 || ts[0].Gap || ts[0].FromSeen {
		t.Fatalf("tenures %+v: want c from ≤ +9s, no gap", ts)
	}
}

// At one zxid, a change one bridge saw sorts before another bridge's
// snapshot of the state after it, whatever their times: the snapshot then
// only re-states what the change already said.
func TestMergeChangeBeforeSnapshotAtOneZxid(t *testing.T) {
	seen := []publish.Event{
		lev(publish.LockAcquired, "a", "", 10, 10, 0, false),
		lev(publish.LockReleased, "b", "a", 10, 20, 400, false),
		lev(publish.LockAcquired, "b", "a", 15, 20, 400, false),
	}
	// the other bridge's snapshot, read just after the change and stamped
	// a little before the first bridge stamped the change
	snap := []publish.Event{lev(publish.LockAcquired, "b", "", 15, 20, 390, true)}
	ts := History(Merge(snap, seen))
	if len(ts) != 2 || !ts[0].Exact() || !ts[1].FromSeen || ts[1].Gap || ts[1].From != h0.Add(400*time.Millisecond) {
		t.Fatalf("tenures %+v: want a exact, b seen elected at +400ms without a gap", ts)
	}
}

// A group found gone is published with zxid 0 (the same id from every
// bridge). Merged with another log, even an identical copy, it must end
// the tenure it followed in its own log, not sort before it as zxid 0
// would: the history of a log and of the log merged with itself agree.
func TestMergeKeepsAGoneEventAfterWhatItEnds(t *testing.T) {
	log := []publish.Event{
		lev(publish.LockAcquired, "a", "", 10, 10, 0, false),
		lev(publish.LockReleased, "", "a", 10, 0, 1000, false), // the group found gone
		lev(publish.LockAcquired, "b", "", 30, 30, 2000, false),
	}
	want := History(log)
	if len(want) != 2 || !want[0].UntilSeen || want[0].Until != h0.Add(time.Second) {
		t.Fatalf("one log: %+v: want a until +1s, then b", want)
	}
	for _, merged := range [][]publish.Event{Merge(log, slices.Clone(log)), Merge(log[:1], log)} {
		got := History(merged)
		if len(got) != len(want) {
			t.Fatalf("merged: %d tenures %+v, want the %d of the log alone %+v", len(got), got, len(want), want)
		}
		for i := range want {
			if got[i].Owner != want[i].Owner || got[i].Until != want[i].Until || got[i].UntilSeen != want[i].UntilSeen || got[i].Gap != want[i].Gap {
				t.Fatalf("merged tenure %d: %+v, want %+v", i, got[i], want[i])
			}
		}
	}
}

// An owner that loses and owns again (same node, new id: the impostor that
// sat below it left) gets a second row, not its first one reopened.
func TestHistoryRegainIsANewRow(t *testing.T) {
	regain := lev(publish.LockAcquired, "a", "x", 10, 40, 3000, false)
	regain.ID = "regain-of-a" // ids unique per change
	ts := History([]publish.Event{
		lev(publish.LockAcquired, "a", "", 10, 10, 0, false),
		lev(publish.LockReleased, "x", "a", 10, 20, 1000, false),
		lev(publish.LockAcquired, "x", "a", 30, 20, 1000, false),
		lev(publish.LockReleased, "a", "x", 30, 40, 3000, false),
		regain,
	})
	if len(ts) != 3 || ts[0].Owner.ID != "a" || !ts[0].Exact() || ts[1].Owner.ID != "a" || !ts[1].Open() || ts[1].From != h0.Add(3*time.Second) {
		t.Fatalf("tenures %+v: want a (exact), a again (open from +3s), x", ts)
	}
}

// --json: snake_case keys like `herald who --json`, held_for in seconds,
// unknown times null; it reads back into the same Tenure.
func TestTenureJSON(t *testing.T) {
	ts := History([]publish.Event{
		lev(publish.LockAcquired, "a", "", 10, 10, 0, false),
		joined("a", "b", 10, 11, 250),
		lev(publish.LockAcquired, "b", "", 15, 30, 9000, true),
	})
	b, err := json.Marshal(ts)
	if err != nil {
		t.Fatal(err)
	}
	var raw []map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	a, open := raw[0], raw[1]
	for _, k := range []string{"group", "recipe", "term", "owner", "from", "from_seen", "until", "until_seen", "last_seen", "held_for", "exact", "gap"} {
		if _, ok := a[k]; !ok {
			t.Errorf("key %q missing in %s", k, b)
		}
	}
	if a["held_for"] != 0.25 || a["until_seen"] != false || a["exact"] != false || a["from_seen"] != true {
		t.Errorf("a: %v: want held_for 0.25 (seconds), until_seen false, from_seen true", a)
	}
	if open["until"] != nil || open["from_seen"] != false || open["gap"] != true {
		t.Errorf("open tenure: %v: want until null, from_seen false, gap", open)
	}
	var back []Tenure
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 || !back[0].Until.Equal(ts[0].Until) || back[0].HeldFor != ts[0].HeldFor || back[0].UntilSeen || !back[1].Open() || back[1].Owner != ts[1].Owner {
		t.Fatalf("round trip: %+v, want %+v", back, ts)
	}
}

// The table marks what was not seen: "≤" before a start first seen in a
// snapshot, "≥" before an end not seen (END "not seen"), "≥" before a held
// time that is only a lower bound.
func TestWriteTableMarksWhatWasNotSeen(t *testing.T) {
	ts := History([]publish.Event{
		lev(publish.LockAcquired, "a", "", 10, 10, 0, false),
		joined("a", "b", 10, 11, 250),
		lev(publish.LockAcquired, "b", "", 15, 30, 9000, true),
		lev(publish.LockReleased, "", "b", 15, 40, 9500, false),
	})
	var buf bytes.Buffer
	if err := WriteTable(&buf, ts, h0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("table:\n%s", buf.String())
	}
	for _, want := range []string{"≥ 2025-01-01T00:00:00Z", "≥ 250ms", "not seen"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("a's row %q lacks %q", lines[1], want)
		}
	}
	for _, want := range []string{"≤ 2025-01-01T00:00:09Z", "≥ 500ms", "unknown", "maybe"} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("b's row %q lacks %q", lines[2], want)
		}
	}
}

// viaLog writes events to a real audit log and reads them back, as
// `herald history --audit` does.
func viaLog(t *testing.T, events ...publish.Event) []publish.Event {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	s, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, events); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	back, err := ReadAll(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// A snapshot finding the group empty with gap=true (a bridge restarted
// after owners came and went unseen) is a row of its own, a stretch where
// owners may be missing, even when no later tenure follows it; in the
// table and the JSON too. The same when the snapshot ends the last owner
// seen (its loss says gap).
func TestHistoryGapWithoutOwnerIsARow(t *testing.T) {
	empty := lev(publish.LockReleased, "", "", 0, 640, 8000, true)
	empty.Gap = true
	ts := History(viaLog(t,
		lev(publish.LockAcquired, "F", "", 633, 633, 0, true),
		lev(publish.LockReleased, "", "F", 633, 634, 1012, false),
		// down: G and H held the lock unseen; back, nobody holds it
		empty.WithID(),
	))
	if len(ts) != 2 || ts[0].Owner.ID != "F" || ts[0].Missing || !ts[0].UntilSeen {
		t.Fatalf("tenures %+v: want F's (release seen), then the stretch with owners missing", ts)
	}
	m := ts[1]
	if !m.Missing || !m.Gap || m.Owner.Node != "" || m.From != h0.Add(1012*time.Millisecond) || m.Until != h0.Add(8*time.Second) || m.Exact() {
		t.Fatalf("stretch %+v: want missing owners, gap, from F's release (+1.012s) to the snapshot (+8s)", m)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, ts, h0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], "owners may be missing") || !strings.Contains(lines[2], "maybe") {
		t.Fatalf("table:\n%s", buf.String())
	}
	b, err := json.Marshal(ts)
	if err != nil || !strings.Contains(string(b), `"missing_owners":true`) {
		t.Fatalf("JSON %s (%v): want missing_owners", b, err)
	}
	var back []Tenure
	if err := json.Unmarshal(b, &back); err != nil || len(back) != 2 || !back[1].Missing || back[1].HeldFor != 0 {
		t.Fatalf("JSON round trip: %+v (%v)", back, err)
	}

	// F's end not seen either: the snapshot names it, with gap=true.
	gone := lev(publish.LockReleased, "", "F", 633, 640, 8000, true)
	gone.Gap = true
	ts = History(viaLog(t, lev(publish.LockAcquired, "F", "", 633, 633, 0, false), gone.WithID()))
	if len(ts) != 2 || ts[0].UntilSeen || ts[0].Open() || !ts[1].Missing || ts[1].From != h0 {
		t.Fatalf("tenures %+v: want F until ≥ (not seen), then owners missing from F's last sight", ts)
	}
	// A later tenure seen taking the lock follows an observed empty group.
	later := lev(publish.LockAcquired, "W", "", 650, 650, 9000, false)
	ts = History(viaLog(t, lev(publish.LockAcquired, "F", "", 633, 633, 0, false), gone.WithID(), later))
	if len(ts) != 3 || !ts[1].Missing || ts[2].Owner.ID != "W" || ts[2].Gap {
		t.Fatalf("tenures %+v: want F, owners missing, then W without a gap of its own", ts)
	}
}

// A restart snapshot that finds the group empty and says gap=false (its
// bridge proved nothing changed since its last report) marks nothing: the
// next tenure, seen taking the lock, says no gap.
func TestHistoryEmptySnapshotWithoutGapMarksNothing(t *testing.T) {
	ts := History(viaLog(t,
		lev(publish.LockAcquired, "T1", "", 1457, 1457, 0, false),
		lev(publish.LockReleased, "", "T1", 1457, 1458, 1007, false),
		// restarted: nobody owns, at the very zxid of T1's release
		lev(publish.LockReleased, "", "", 0, 1458, 3000, true),
		lev(publish.LockAcquired, "T2", "", 1462, 1462, 4000, false),
		lev(publish.LockReleased, "", "T2", 1462, 1463, 5008, false),
	))
	if len(ts) != 2 || !ts[0].Exact() || !ts[1].Exact() || ts[0].Gap || ts[1].Gap {
		t.Fatalf("tenures %+v: want T1 and T2, both exact, no gap", ts)
	}
}

// A tenure whose first stored event is its leader.ready (the older part of
// the log is gone) is the current one from there: a later owner ends it,
// unseen, and its start is "≤ the ready".
func TestHistoryReadyFirstIsEndedByTheNextOwner(t *testing.T) {
	ready := hev(publish.LeaderReady, "beta", "", 10, 0)
	ready.Zxid = 11
	delta := hev(publish.LeaderElected, "delta", "", 28, 3)
	delta.Zxid, delta.Snapshot = 28, true
	lost := hev(publish.LeaderLost, "", "delta", 28, 6)
	lost.Zxid, lost.Reason = 30, elect.ReasonUnknown
	ts := History(viaLog(t, ready.WithID(), joinedUnder("beta", 10, 1), delta.WithID(), lost.WithID()))
	if len(ts) != 2 {
		t.Fatalf("%d tenures, want beta's and delta's: %+v", len(ts), ts)
	}
	beta := ts[0]
	if beta.Owner.ID != "beta" || beta.Open() || beta.UntilSeen || beta.Until != h0.Add(time.Minute) || beta.From != h0 || beta.FromSeen || beta.Ready != h0 {
		t.Fatalf("beta %+v: want from ≤ +0 (the ready), until ≥ +1m (last seen), end not seen", beta)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, ts, h0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "holding") {
		t.Fatalf("table says holding:\n%s", buf.String())
	}
}

// joinedUnder is candidate.joined at minute min while owner (term) holds.
func joinedUnder(owner string, term int64, min int) publish.Event {
	e := hev(publish.CandidateJoined, owner, "", term, min)
	e.Candidate = &publish.Participant{ID: "w", Node: "n_w"}
	return e.WithID()
}

// A bridge's empty snapshot says gap=true against its own last report;
// merged with the log of a bridge that observed the stretch (HA), the
// changes before it already reach its zxid: nothing is missing there.
func TestMergeGapCoveredByTheOtherLog(t *testing.T) {
	empty := lev(publish.LockReleased, "", "", 0, 651, 9000, true)
	empty.Gap = true
	down := viaLog(t, lev(publish.LockAcquired, "F", "", 633, 633, 0, false), empty.WithID())
	up := viaLog(t,
		lev(publish.LockAcquired, "F", "", 633, 633, 0, false),
		lev(publish.LockReleased, "", "F", 633, 634, 1000, false),
		lev(publish.LockAcquired, "G", "", 650, 650, 2000, false),
		lev(publish.LockReleased, "", "G", 650, 651, 3000, false),
	)
	if ts := History(down); len(ts) != 2 || !ts[1].Missing {
		t.Fatalf("the restarted bridge's log alone: %+v: want F, then owners missing", ts)
	}
	ts := History(Merge(down, up))
	if len(ts) != 2 || ts[0].Owner.ID != "F" || ts[1].Owner.ID != "G" || !ts[1].Exact() {
		t.Fatalf("merged: %+v: want F and G, both seen, and no stretch of missing owners", ts)
	}
}

// TestHistoryMissingFileMarksOneGap: with a rotated file gone, the log
// jumps from a's tenure to the end of b's, whose start it never saw: b's
// row carries the gap, and c's, which follows b's seen end, does not.
func TestHistoryMissingFileMarksOneGap(t *testing.T) {
	ts := History([]publish.Event{
		hev(publish.LockAcquired, "a", "", 606, 0),
		// lost with the file: a's release, b's acquisition
		hev(publish.LockReleased, "", "b", 904, 5),
		hev(publish.LockAcquired, "c", "b", 910, 5),
		hev(publish.LockReleased, "", "c", 910, 6),
	})
	gaps := map[string]bool{}
	for _, tn := range ts {
		gaps[tn.Owner.ID] = tn.Gap
	}
	if len(ts) != 3 || !gaps["b"] || gaps["c"] {
		t.Fatalf("tenures %+v: want a, b (gap: its start unseen), c (no gap)", ts)
	}
	if a := ts[0]; a.Owner.ID != "a" || a.UntilSeen {
		t.Fatalf("a's tenure %+v: want its end unseen", a)
	}
}

// TestMergeGapMarkCoveredByTheOtherLogsCopy: a bridge that took over past
// its replay window marks its own log's first event of a group as a gap
// (its log never got what came before); the bridge before it logged the
// same event, unmarked. Merged, the two logs miss nothing: no gap.
func TestMergeGapMarkCoveredByTheOtherLogsCopy(t *testing.T) {
	before := viaLog(t,
		lev(publish.LockAcquired, "F", "", 633, 633, 0, false),
		lev(publish.LockReleased, "", "F", 633, 634, 1000, false),
		lev(publish.LockAcquired, "G", "", 650, 650, 2000, false),
	)
	// The new bridge saw G come a little before the old one did.
	marked := lev(publish.LockAcquired, "G", "", 650, 650, 1900, false)
	marked.Gap = true
	after := viaLog(t, marked.WithID(), lev(publish.LockReleased, "", "G", 650, 651, 3000, false))
	if ts := History(after); len(ts) != 1 || !ts[0].Gap {
		t.Fatalf("the new bridge's log alone: %+v: want G, marked as a gap", ts)
	}
	ts := History(Merge(before, after))
	for _, tn := range ts {
		if tn.Gap || tn.Missing {
			t.Fatalf("merged: %+v: want F and G with nothing missing", ts)
		}
	}
	if len(ts) != 2 || ts[0].Owner.ID != "F" || ts[1].Owner.ID != "G" {
		t.Fatalf("merged: %+v: want F and G", ts)
	}
}

// The bridge that took over past its replay window states the group
// afresh, marked as a gap: a snapshot, its own sighting of the owner with
// an id of its own (no longer the change's). Merged with the log of the
// bridge before it, which saw that owner's change happen, the sighting
// falls within the tenure that log tells, and marks nothing.
func TestMergeSightingWithinATenureMarksNothing(t *testing.T) {
	before := viaLog(t,
		lev(publish.LockAcquired, "F", "", 633, 633, 0, false),
		lev(publish.LockReleased, "", "F", 633, 634, 1000, false),
		lev(publish.LockAcquired, "G", "", 650, 650, 2000, false),
	)
	sighting := lev(publish.LockAcquired, "G", "", 650, 655, 2500, true)
	sighting.Gap, sighting.Source = true, "new"
	sighting = sighting.WithID()
	if sighting.ID == before[2].ID || sighting.ChangeID() != before[2].ID {
		t.Fatalf("the sighting's id %s, its change's %s: want its own, and G's change", sighting.ID, sighting.ChangeID())
	}
	after := viaLog(t, sighting, lev(publish.LockReleased, "", "G", 650, 656, 3000, false))
	ts := History(Merge(before, after))
	if len(ts) != 2 || ts[0].Owner.ID != "F" || ts[1].Owner.ID != "G" {
		t.Fatalf("merged: %+v: want F and G", ts)
	}
	for _, tn := range ts {
		if tn.Gap || tn.Missing {
			t.Fatalf("merged: %+v: want F and G with nothing missing", ts)
		}
	}
}

// TestHistoryLateLossOfAnEarlierOwnerMakesNoGap: a runner announces its
// own release, at the zxid of the deletion, which is also the zxid of the
// bridge's event for the next owner; when the runner's clock (or its read
// of the zxid) puts its release a moment after that gain, the release is
// read after it. That late loss made the older tenure "the last one
// current" again, so the owner after the next named a previous that was
// not the last one seen, and history marked its tenure as a possible gap.
func TestHistoryLateLossOfAnEarlierOwnerMakesNoGap(t *testing.T) {
	at := func(e publish.Event, zxid int64, ms int) publish.Event {
		e.Recipe, e.Zxid, e.Time = elect.RecipeLock, zxid, h0.Add(time.Duration(ms)*time.Millisecond)
		return e.WithID()
	}
	released := func(prev string, term int64) publish.Event {
		e := hev(publish.LockReleased, "", prev, term, 0)
		e.Reason = elect.ReasonReleased
		return e
	}
	ts := History(Merge([]publish.Event{
		at(hev(publish.LockAcquired, "a", "", 10, 0), 10, 0),
		at(hev(publish.LockAcquired, "b", "a", 20, 0), 21, 300),
		at(released("a", 10), 21, 301), // the runner's own, read after b's gain
		at(hev(publish.LockAcquired, "c", "b", 30, 0), 31, 600),
		at(released("b", 20), 31, 601),
		at(hev(publish.LockAcquired, "d", "c", 40, 0), 41, 900),
		at(released("c", 30), 41, 901),
		at(released("d", 40), 50, 1200),
	}))
	if len(ts) != 4 {
		t.Fatalf("%d tenures, want 4: %+v", len(ts), ts)
	}
	for _, x := range ts {
		if x.Gap || x.Missing || !x.FromSeen || !x.UntilSeen || x.Reason != elect.ReasonReleased {
			t.Errorf("tenure of %s (term %d) not told whole: %+v", x.Owner.ID, x.Term, x)
		}
	}
}

// An owner no gain showed, named only by candidates' events (its gain
// aged out of a stream with a max age, or sat in the part of a log that
// is gone), is the current tenure from the first of them on, its start
// not seen: it was left out of the history while who named it. After
// other events of the group, an owner may have come and gone unseen
// between them: a gap. The next owner's gain ends it.
func TestHistoryOwnerNamedOnlyByCandidates(t *testing.T) {
	ts := History([]publish.Event{joinedUnder("xray", 57, 5), joinedUnder("xray", 57, 6)})
	if len(ts) != 1 {
		t.Fatalf("%d tenures, want xray's: %+v", len(ts), ts)
	}
	x := ts[0]
	if x.Owner.ID != "xray" || x.Term != 57 || !x.Open() || x.FromSeen || x.From != h0.Add(5*time.Minute) || x.LastSeen != h0.Add(6*time.Minute) || x.Gap {
		t.Fatalf("xray %+v: want from ≤ +5m, seen at +6m, holding, no gap (nothing before it)", x)
	}
	ts = History([]publish.Event{
		hev(publish.LeaderElected, "a", "", 10, 0),
		hev(publish.LeaderLost, "", "a", 10, 1),
		joinedUnder("xray", 57, 5),
		hev(publish.LeaderElected, "yank", "xray", 70, 8),
	})
	if len(ts) != 3 {
		t.Fatalf("%d tenures, want a's, xray's and yank's: %+v", len(ts), ts)
	}
	if x := ts[1]; x.Owner.ID != "xray" || !x.Gap || x.FromSeen || x.Open() || !x.UntilSeen || x.Until != h0.Add(8*time.Minute) {
		t.Fatalf("xray %+v: want from ≤ +5m with a gap before it, ended at yank's gain", x)
	}
	if y := ts[2]; y.Owner.ID != "yank" || y.Gap {
		t.Fatalf("yank %+v: want it following xray, no gap", y)
	}
}

// A tenure whose gain one bridge logged and whose loss another logged, on
// a host whose clock runs five minutes slow (an HA takeover between
// them), ends before it begins by their times. It read as exact, HELD FOR
// -4m59s; its length is now unknown and the row says the clocks disagree,
// its order (by zxid) unchanged.
func TestHistoryEndsDatedByClocksThatDisagree(t *testing.T) {
	gain := hev(publish.LeaderElected, "a", "", 10, 10)
	gain.Zxid, gain.Source = 10, "bridge-a"
	loss := hev(publish.LeaderLost, "", "a", 10, 5)
	loss.Zxid, loss.Source, loss.Reason = 20, "bridge-b", elect.ReasonResigned
	next := hev(publish.LeaderElected, "b", "a", 20, 6)
	next.Zxid, next.Source = 20, "bridge-b"
	ts := History(Merge([]publish.Event{gain.WithID()}, []publish.Event{loss.WithID(), next.WithID()}))
	if len(ts) != 2 || ts[0].Owner.ID != "a" || ts[1].Owner.ID != "b" {
		t.Fatalf("tenures %+v: want a's, then b's", ts)
	}
	a := ts[0]
	if !a.ClocksDisagree || a.Exact() || a.HeldFor != 0 {
		t.Fatalf("a %+v: want its clocks said to disagree, not exact, no length", a)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, ts, h0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "? (clocks disagree)") || strings.Contains(buf.String(), "-4m") {
		t.Fatalf("table:\n%s", buf.String())
	}
	b, err := json.Marshal(a)
	if err != nil || !strings.Contains(string(b), `"clocks_disagree":true`) || !strings.Contains(string(b), `"held_for":null`) || !strings.Contains(string(b), `"exact":false`) {
		t.Fatalf("json: %s (%v)", b, err)
	}
	var back Tenure
	if err := json.Unmarshal(b, &back); err != nil || !back.ClocksDisagree {
		t.Fatalf("read back: %+v (%v)", back, err)
	}
	if ts[1].ClocksDisagree {
		t.Fatalf("b %+v: its ends came from one clock", ts[1])
	}
}

// A bridge taking over past its replay window marks G's gain gap: its
// log missed what came before. Another bridge's log holds G's gain
// unmarked, but as its very first event of the group (its first run,
// with no report to measure against): it saw nothing before G either.
// The mark was dropped as covered, and the merged history read F then G
// with nothing missing, where an owner may have held between them.
func TestMergeFirstEventOfALogCoversNoGap(t *testing.T) {
	old := viaLog(t,
		lev(publish.LockAcquired, "F", "", 633, 633, 0, false),
		lev(publish.LockReleased, "", "F", 633, 634, 1000, false),
	)
	first := viaLog(t, lev(publish.LockAcquired, "G", "", 650, 650, 2100, true))
	marked := lev(publish.LockAcquired, "G", "", 650, 650, 2000, false)
	marked.Gap = true
	takeover := viaLog(t, marked.WithID())
	ts := History(Merge(old, first, takeover))
	if len(ts) != 2 || ts[0].Owner.ID != "F" || ts[1].Owner.ID != "G" || !ts[1].Gap {
		t.Fatalf("merged: %+v: want F, then G marked as a gap", ts)
	}
}

// A new ensemble's snapshot restarts the group's history once, however
// many bridges' logs hold it: the active bridge logged its own, then F's
// release and G; the standby that took over logged the snapshot it held
// (its change's id, WithChangeID) and the same changes. With an id of its
// own, the held copy started the group again: F shown twice, its first
// tenure ended unseen.
func TestMergeNewEnsembleOnceAcrossBridges(t *testing.T) {
	snap := func(src string) publish.Event {
		e := lev(publish.LockAcquired, "F", "", 5, 6, 1000, true)
		e.Source = src
		evs := []publish.Event{e.WithID()}
		publish.MarkNewEnsemble(evs)
		return evs[0]
	}
	old := lev(publish.LockAcquired, "X", "", 600, 600, 0, false)
	changes := []publish.Event{
		lev(publish.LockReleased, "", "F", 5, 7, 2000, false),
		lev(publish.LockAcquired, "G", "", 8, 8, 2000, false),
	}
	active := viaLog(t, append([]publish.Event{old, snap("a")}, changes...)...)
	standby := viaLog(t, append([]publish.Event{snap("b").WithChangeID()}, changes...)...)
	ts := History(Merge(active, standby))
	var owners []string
	for _, tn := range ts {
		owners = append(owners, tn.Owner.ID)
	}
	if len(ts) != 3 || owners[0] != "X" || owners[1] != "F" || owners[2] != "G" {
		t.Fatalf("merged: owners %v: want X, F (the new ensemble's), G: %+v", owners, ts)
	}
}

// The gap mark of a takeover's sighting of an owner (a snapshot, with an
// id of its own since sightings have one) is covered, as a change's copy
// is, by another log holding that owner's change unmarked: the owner held
// from that change to the sighting, so no owner is missing between. Kept,
// it made who's health say changes may be missing for an hour after every
// such takeover, where the change's own id used to drop it.
func TestMergeGapMarkOfASightingCoveredByTheOtherLogsChange(t *testing.T) {
	before := viaLog(t,
		lev(publish.LockAcquired, "F", "", 633, 633, 0, false),
		lev(publish.LockReleased, "", "F", 633, 634, 1000, false),
		lev(publish.LockAcquired, "G", "", 650, 650, 2000, false),
	)
	sighting := lev(publish.LockAcquired, "G", "", 650, 655, 2500, true)
	sighting.Gap, sighting.Source = true, "new"
	after := viaLog(t, sighting.WithID(), lev(publish.LockReleased, "", "G", 650, 656, 3000, false))
	for _, e := range Merge(before, after) {
		if e.Gap {
			t.Fatalf("merged: %s of %s at %d keeps its gap mark; the other log saw G's change with nothing missed", e.Type, e.Owner.ID, e.Zxid)
		}
	}
	// A log that never saw G covers nothing.
	for _, e := range Merge(viaLog(t, lev(publish.LockAcquired, "H", "", 700, 701, 0, true)), after) {
		if e.Snapshot && e.Owner.ID == "G" && !e.Gap {
			t.Fatalf("merged with a log that never saw G: %+v: want G's sighting marked", e)
		}
	}
}

// TestHistoryGapRestatingALeaderNoSessionHoldsSplitsItsTenure: a bridge
// restarted after a stretch it did not see restates Kafka's persistent
// KRaft /controller, same node and term, with the gap mark (other
// controllers may have registered and this one again meanwhile). Its
// term proves no unbroken hold, so the history ends the tenure where it
// was last seen and starts it again, marked; an ephemeral owner's
// restatement, whose node existed throughout, stays one tenure.
func TestHistoryGapRestatingALeaderNoSessionHoldsSplitsItsTenure(t *testing.T) {
	for _, session := range []string{"", "0x1"} {
		ev := func(ms int, snap, gap bool) publish.Event {
			e := lev(publish.LeaderElected, "3000", "", 50, int64(50+ms), ms, snap)
			e.Recipe, e.Group, e.Gap = elect.RecipeElection, "/controller", gap
			e.Owner.Node, e.Owner.Session = "controller", session
			return e.WithID()
		}
		ts := History([]publish.Event{ev(0, false, false), ev(1000, true, false), ev(60000, true, true)})
		if session != "" {
			if len(ts) != 1 || ts[0].Gap || !ts[0].Open() {
				t.Errorf("an ephemeral owner restated with a gap mark: %+v; want one open tenure, no gap", ts)
			}
			continue
		}
		if len(ts) != 2 {
			t.Fatalf("%d tenures: %+v; want the tenure to the last sighting, then a gap and the same controller again", len(ts), ts)
		}
		a, b := ts[0], ts[1]
		if a.Open() || a.UntilSeen || a.Until != h0.Add(time.Second) || a.Gap {
			t.Errorf("before the stretch: %+v; want ended unseen at its last sighting (+1s), no gap", a)
		}
		if !b.Open() || !b.Gap || b.FromSeen || b.From != h0.Add(time.Minute) || b.Owner.ID != "3000" {
			t.Errorf("after the stretch: %+v; want 3000 open from +60s (first seen), marked gap", b)
		}
	}
}
