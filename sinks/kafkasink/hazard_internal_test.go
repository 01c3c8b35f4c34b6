package kafkasink

import (
	"context"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
)

// TestOwnerChangesRestateTheHazard: a candidate event that changes only
// the group's hazard writes the owner's record again, as it was (type,
// id, the tenure's first time) with the new hazard; one about another
// tenure, or with the hazard unchanged, writes nothing.
func TestOwnerChangesRestateTheHazard(t *testing.T) {
	a := &publish.Participant{ID: "a", Node: "n_1"}
	k := &publish.Participant{ID: "k", Node: "k__lock__0000000002"}
	t0 := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	ev := func(typ publish.Type, term, zxid int64, hazard string, at time.Time) publish.Event {
		e := publish.Event{Type: typ, Group: "/g", Recipe: elect.RecipeLock, Owner: a, Term: term, Zxid: zxid, Hazard: hazard, Time: at, Source: "t"}
		if typ == publish.CandidateJoined || typ == publish.CandidateLeft {
			e.Candidate = k
		}
		return e.WithID()
	}
	acquired := ev(publish.LockAcquired, 10, 10, "", t0)
	got, st := ownerChanges([]publish.Event{acquired}, map[string]ownerState{})
	if len(got) != 1 || st["/g"].hazard != "" || !st["/g"].owning {
		t.Fatalf("acquired: wrote %v, state %+v", got, st)
	}
	joined := ev(publish.CandidateJoined, 10, 12, "Kazoo cannot read n_1", t0.Add(time.Minute))
	got, st = ownerChanges([]publish.Event{joined}, st)
	if len(got) != 1 {
		t.Fatalf("a candidate bringing a hazard wrote %v; want the owner's record restated", got)
	}
	r := got[0]
	if r.Type != publish.LockAcquired || r.ID == acquired.ID || r.ID == joined.ID || !r.Time.Equal(t0) || r.Hazard != joined.Hazard || r.Zxid != 12 || r.Candidate != nil || r.Owner == nil || r.Owner.Node != "n_1" {
		t.Fatalf("restated record %+v; want lock.acquired of n_1 at %v, with the hazard, zxid 12 and an id of its own", r, t0)
	}
	if again, _ := ownerChanges([]publish.Event{joined}, map[string]ownerState{"/g": {term: 10, owning: true}}); len(again) != 1 || again[0].ID != r.ID {
		t.Fatalf("the same change restated again (another bridge): %v; want the same id %s", again, r.ID)
	}
	if m, err := ownerMessage("owners", r, false); err != nil || m.Value == nil {
		t.Fatalf("restated record as a message: %v, %v; want a value (not a tombstone)", m, err)
	}
	if again, _ := ownerChanges([]publish.Event{ev(publish.CandidateJoined, 10, 13, joined.Hazard, t0)}, st); len(again) != 0 {
		t.Fatalf("the same hazard again wrote %v", again)
	}
	if late, _ := ownerChanges([]publish.Event{ev(publish.CandidateLeft, 10, 11, "", t0)}, st); len(late) != 0 {
		t.Fatalf("an event older than the hazard recorded (zxid 11 < 12) wrote %v", late)
	}
	if other, _ := ownerChanges([]publish.Event{ev(publish.CandidateJoined, 9, 14, "", t0)}, st); len(other) != 0 {
		t.Fatalf("an event about another term wrote %v", other)
	}
	left := ev(publish.CandidateLeft, 10, 15, "", t0.Add(2*time.Minute))
	if got, st = ownerChanges([]publish.Event{left}, st); len(got) != 1 || got[0].Hazard != "" || st["/g"].hazard != "" {
		t.Fatalf("the hazard gone: wrote %v, state %+v; want the record restated without it", got, st)
	}
	// Ready stays ready.
	e := publish.Event{Type: publish.LeaderReady, Group: "/e", Recipe: elect.RecipeElection, Owner: a, Term: 20, Zxid: 20, Time: t0}.WithID()
	_, st = ownerChanges([]publish.Event{e}, map[string]ownerState{})
	c := publish.Event{Type: publish.CandidateJoined, Group: "/e", Recipe: elect.RecipeElection, Owner: a, Candidate: k, Term: 20, Zxid: 21, Hazard: "h"}.WithID()
	if got, _ = ownerChanges([]publish.Event{c}, st); len(got) != 1 || got[0].Type != publish.LeaderReady || got[0].Hazard != "h" {
		t.Fatalf("restating a ready leader wrote %+v; want leader.ready with the hazard", got)
	}
}

// TestOwnersTopicCarriesTheHazard, on a Kafka-protocol broker: the owners
// topic's record of a group is restated when a client joins that may
// believe it owns beside the owner, and again when it leaves, with the
// owner and its readiness unchanged; a sink started later learns the
// record's state from the topic (LastReports) and restates it too.
func TestOwnersTopicCarriesTheHazard(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := testConfig(t, c)
	s := connected(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := &publish.Participant{ID: "a", Node: "n_0000000001"}
	k := &publish.Participant{ID: "k", Node: "k__lock__0000000002"}
	mk := func(typ publish.Type, zxid int64, hazard string) publish.Event {
		e := publish.Event{Type: typ, Group: "/jobs", Recipe: elect.RecipeElection, Owner: a, Term: 10, Zxid: zxid,
			Hazard: hazard, Time: time.Now().UTC(), Source: "test"}
		if typ == publish.CandidateJoined || typ == publish.CandidateLeft {
			e.Candidate = k
		}
		return e.WithID()
	}
	const h = "Kazoo Lock or Election (k__lock__0000000002) cannot read n_0000000001"
	if err := s.Write(ctx, []publish.Event{mk(publish.LeaderElected, 10, ""), mk(publish.LeaderReady, 11, "")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []publish.Event{mk(publish.CandidateJoined, 12, h)}); err != nil {
		t.Fatal(err)
	}
	st, err := FollowOwners(ctx, cfg, "/jobs")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var last OwnerUpdate
	for _, u := range collect(ctx, st, 2) {
		last = u
	}
	if o := last.Owner(); o == nil || o.Node != a.Node || !last.Ready() || last.Event.Hazard != h {
		t.Fatalf("owners topic's last record: owner %v, ready %v, hazard %q; want n_0000000001, ready, with the hazard", o, last.Ready(), last.Event.Hazard)
	}
	// A new sink (a restarted bridge) learns the record from the topic.
	s2 := connected(t, cfg)
	if _, err := s2.LastReports(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s2.Write(ctx, []publish.Event{mk(publish.CandidateLeft, 13, "")}); err != nil {
		t.Fatal(err)
	}
	u := collect(ctx, st, 1)
	if len(u) != 1 || u[0].Owner() == nil || !u[0].Ready() || u[0].Event.Hazard != "" || u[0].Event.Zxid != 13 {
		t.Fatalf("after the client left, through a new sink: %+v; want the ready owner restated without the hazard", u)
	}
}

// TestOwnerRecordsSayWhenSinceIsUnseen: an owner first reported by a
// snapshot gets records marked SinceUnseenHeader for its whole tenure,
// each with the time of the tenure's first report (the ready record
// too), and decoding gives SinceUnseen back; an owner first reported by a
// change gets no mark.
func TestOwnerRecordsSayWhenSinceIsUnseen(t *testing.T) {
	t0 := time.Unix(1700000000, 0).UTC()
	ev := func(typ publish.Type, term, zxid int64, _ string, at time.Time) publish.Event {
		return publish.Event{Type: typ, Group: "/g", Recipe: elect.RecipeLock, Owner: &publish.Participant{ID: "a", Node: "n_1"},
			Term: term, Zxid: zxid, Time: at, Source: "t"}.WithID()
	}
	snap := ev(publish.LockAcquired, 10, 11, "", t0)
	snap.Snapshot = true
	snap = snap.WithID()
	ready := ev(publish.LeaderReady, 10, 12, "", t0.Add(time.Minute))
	changes, st := ownerChanges([]publish.Event{snap}, map[string]ownerState{})
	if len(changes) != 1 || !st["/g"].unseen {
		t.Fatalf("snapshot first: %v, state %+v; want one record, unseen", changes, st["/g"])
	}
	changes, st2 := ownerChanges([]publish.Event{ready}, st)
	if len(changes) != 1 || !st2["/g"].unseen || !changes[0].Time.Equal(t0) {
		t.Fatalf("ready after a snapshot: %v, state %+v; want one record at the first report's time %v, unseen", changes, st2["/g"], t0)
	}
	for _, e := range []publish.Event{snap, changes[0]} {
		m, err := ownerMessage("owners", e, true)
		if err != nil {
			t.Fatal(err)
		}
		u, err := decodeOwner(m)
		if err != nil || !u.SinceUnseen || !u.Event.Time.Equal(t0) || !stateOf(u).unseen {
			t.Fatalf("decoded %+v (%v); want SinceUnseen and time %v", u, err, t0)
		}
	}
	live := ev(publish.LockAcquired, 20, 21, "", t0.Add(time.Hour))
	if _, st3 := ownerChanges([]publish.Event{live}, st2); st3["/g"].unseen {
		t.Fatal("an owner first reported by a change is marked unseen")
	}
	m, err := ownerMessage("owners", live, false)
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := decodeOwner(m); u.SinceUnseen {
		t.Fatal("decoded SinceUnseen from a record without the mark")
	}
}
