package publish_test

import (
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// TestFollowerNewEnsemble: a follower takes a new ensemble's snapshot for
// the group's state although its term is below the owner's it holds, and
// an unmarked one stays stale.
func TestFollowerNewEnsemble(t *testing.T) {
	f, err := publish.NewFollower()
	if err != nil {
		t.Fatal(err)
	}
	ev := func(id string, term int64) publish.Event {
		return publish.Event{Type: publish.LeaderElected, Group: "/g", Recipe: elect.RecipeElection, Owner: &publish.Participant{ID: id, Node: id},
			Term: term, Zxid: term, Snapshot: true, Time: time.Now(), Source: "s"}.WithID()
	}
	f.Apply(ev("a", 600))
	if v := f.Judge(ev("b", 5)); v != publish.Stale {
		t.Fatalf("an unmarked lower term: %v, want stale", v)
	}
	evs := []publish.Event{ev("b", 5)}
	publish.MarkNewEnsemble(evs)
	if v := f.Judge(evs[0]); v != publish.Applied {
		t.Fatalf("a new ensemble's snapshot: %v, want applied", v)
	}
	if o, term, ok := f.Owner("/g"); !ok || o.ID != "b" || term != 5 {
		t.Fatalf("owner %+v term %d, want b at 5", o, term)
	}
}

// A new ensemble's snapshot restarts a group's state once, however many
// bridges take it: the active bridge published its own, then the next
// owner; the standby that took over replays the snapshot it held (its
// change's id, WithChangeID). With an id of its own, the held copy was
// stored after the next owner and a follower went back to the owner it
// names.
func TestFollowerNewEnsembleOnceAcrossBridges(t *testing.T) {
	const g = "/svc/ne"
	f, err := publish.NewFollower()
	if err != nil {
		t.Fatal(err)
	}
	old := &elect.Participant{ID: "a", Node: "_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-n_0000000000", Czxid: 5}
	next := &elect.Participant{ID: "b", Node: "_c_3f2504e0-4f89-11d3-9a0c-0305e82c3302-n_0000000001", Czxid: 7}
	snap := func(src string) publish.Event {
		evs := publish.Translate(elect.Change{Kind: elect.Snapshot, Group: g, Recipe: elect.RecipeElection, Owner: old, Zxid: 6, Queue: []elect.Participant{*old}}, src, time.Now())
		publish.MarkNewEnsemble(evs)
		return evs[0]
	}
	stream := append([]publish.Event{snap("bridge-a")},
		publish.Translate(elect.Change{Kind: elect.OwnerChanged, Group: g, Recipe: elect.RecipeElection, Previous: old, Owner: next, Zxid: 7, Reason: elect.ReasonDeleted}, "bridge-a", time.Now())...)
	stream = append(stream, snap("bridge-b").WithChangeID()) // the standby's replay
	for _, e := range stream {
		f.Judge(e)
	}
	if o, term, ok := f.Owner(g); !ok || o.ID != "b" || term != 7 {
		t.Fatalf("after the standby's replay of its new-ensemble snapshot: owner %+v term %d; want b at 7", o, term)
	}
}
