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
