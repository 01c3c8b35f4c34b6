package publish

import (
	"errors"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// TestRestatedNoOwnerKeepsWhenItWasLost: a group without an owner is
// restated as "no owner" since the loss that left it so, not since the
// restatement: a later event restating that nobody owns (a reconnect's
// snapshot) keeps that time, and so does a restatement made much later.
// A group first seen ownerless is so since that first sight. An owner's
// event keeps its tenure's start as before, and the ids are those of a
// snapshot of the same state whatever the time.
func TestRestatedNoOwnerKeepsWhenItWasLost(t *testing.T) {
	const g, src = "/since/g", "bridge-1"
	t0 := time.Unix(1700000000, 0).UTC()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	a := &elect.Participant{ID: "a", Node: "x_" + elect.FormatSequence(1), Session: 0x101, Sequence: 1, Czxid: 101}
	b := &elect.Participant{ID: "b", Node: "x_" + elect.FormatSequence(2), Session: 0x102, Sequence: 2, Czxid: 102}
	el := elect.RecipeElection
	cur := current{}
	fold := func(c elect.Change, when time.Time) {
		c.Group, c.Recipe = g, el
		for _, e := range Translate(c, src, when) {
			cur.apply(e)
		}
	}
	// restated checks the snapshot made at now: one event, of type typ,
	// stamped want, with the id Translate gives a snapshot of state.
	restated := func(step string, now time.Time, state elect.Change, typ Type, want time.Time) {
		t.Helper()
		state.Kind, state.Group, state.Recipe = elect.Snapshot, g, el
		got := cur[g].snapshot(g, now)
		same := Translate(state, src, now)
		if len(got) != 1 || len(same) != 1 {
			t.Fatalf("%s: restated %+v, want one event", step, got)
		}
		if got[0].Type != typ || !got[0].Time.Equal(want) {
			t.Errorf("%s: restated %s at %s, want %s at %s", step, got[0].Type, got[0].Time.Format(time.TimeOnly), typ, want.Format(time.TimeOnly))
		}
		if got[0].ID != same[0].ID {
			t.Errorf("%s: restated id %s, want %s, the id of a snapshot of the same state", step, got[0].ID, same[0].ID)
		}
	}

	fold(elect.Change{Kind: elect.Snapshot, Owner: a, Queue: []elect.Participant{*a}, Zxid: 10}, at(0))
	fold(elect.Change{Kind: elect.Snapshot, Owner: a, Queue: []elect.Participant{*a}, Zxid: 10}, at(time.Minute))
	restated("owner a, re-stated", at(2*time.Minute), elect.Change{Owner: a, Queue: []elect.Participant{*a}, Zxid: 10}, LeaderElected, at(0))

	// a resigns at 11:11:23 in the report's words; the store is lost and
	// restated at 11:17:46.
	fold(elect.Change{Kind: elect.OwnerChanged, Previous: a, Zxid: 20}, at(3*time.Minute))
	restated("a lost", at(9*time.Minute), elect.Change{Zxid: 20}, LeaderLost, at(3*time.Minute))

	// A reconnect's snapshot finds the group still empty: nothing changed.
	fold(elect.Change{Kind: elect.Snapshot, Zxid: 20}, at(5*time.Minute))
	restated("empty re-stated", at(10*time.Minute), elect.Change{Zxid: 20}, LeaderLost, at(3*time.Minute))

	// b is elected and loses: ownerless since b's loss.
	fold(elect.Change{Kind: elect.OwnerChanged, Owner: b, Queue: []elect.Participant{*b}, Zxid: 30}, at(11*time.Minute))
	restated("owner b", at(12*time.Minute), elect.Change{Owner: b, Queue: []elect.Participant{*b}, Zxid: 30}, LeaderElected, at(11*time.Minute))
	fold(elect.Change{Kind: elect.OwnerChanged, Previous: b, Zxid: 40}, at(13*time.Minute))
	fold(elect.Change{Kind: elect.Snapshot, Zxid: 40}, at(14*time.Minute))
	restated("b lost", at(20*time.Minute), elect.Change{Zxid: 40}, LeaderLost, at(13*time.Minute))

	// A group first seen without an owner is so since it was first seen.
	delete(cur, g)
	fold(elect.Change{Kind: elect.Snapshot, Zxid: 50}, at(21*time.Minute))
	fold(elect.Change{Kind: elect.Snapshot, Zxid: 50}, at(22*time.Minute))
	restated("first seen empty", at(30*time.Minute), elect.Change{Zxid: 50}, LeaderLost, at(21*time.Minute))
}

// TestOwnersStoreLostRestatesNoOwnerSinceTheLoss: through the pipeline, a
// sink that lost its store gets the ownerless group's "no owner" stamped
// with the time of the loss that was published, and the owned group's
// owner with its tenure's start.
func TestOwnersStoreLostRestatesNoOwnerSinceTheLoss(t *testing.T) {
	own := &keeper{memSink: newMem("owners")}
	p := start(t, []Sink{own}, WithBackoff(time.Millisecond, 10*time.Millisecond))
	ctx := t.Context()
	a, b := part("a", 1, 101), part("b", 2, 102)
	gained, lost := time.Now().Add(-10*time.Minute).UTC(), time.Now().Add(-6*time.Minute).UTC()
	pub := func(ch elect.Change, when time.Time) {
		if err := p.Publish(ctx, Translate(ch, "src", when)...); err != nil {
			t.Fatal(err)
		}
	}
	pub(snapshotOf("/s/owned", a, 10), gained)
	pub(snapshotOf("/s/empty", b, 11), gained)
	pub(elect.Change{Kind: elect.OwnerChanged, Group: "/s/empty", Recipe: elect.RecipeElection, Previous: b, Zxid: 12}, lost)
	waitFor(t, 5*time.Second, "the events stored", func() bool { return own.count() == 3 })

	own.mu.Lock()
	own.failNext, own.failErr = 1, errors.New("owners store deleted: "+ErrReconnect.Error())
	own.mu.Unlock()
	own.lost.Store(true)
	pub(elect.Change{Kind: elect.Snapshot, Group: "/s/empty", Recipe: elect.RecipeElection, Zxid: 12}, time.Now().UTC())
	waitFor(t, 5*time.Second, "the restatement stored", func() bool { return own.count() >= 3+1+2 })
	time.Sleep(50 * time.Millisecond)
	got := own.stored()
	if len(got) != 6 {
		t.Fatalf("%d events stored, want 6 (three published, the retried snapshot, both groups restated): %+v", len(got), briefs(got))
	}
	for _, e := range got[4:] {
		switch {
		case e.Group == "/s/owned" && (e.Type != LeaderElected || !e.Time.Equal(gained)):
			t.Errorf("/s/owned restated as %s at %s, want its owner since %s", e.Type, e.Time, gained)
		case e.Group == "/s/empty" && (e.Type != LeaderLost || !e.Time.Equal(lost)):
			t.Errorf("/s/empty restated as %s at %s, want no owner since the loss at %s", e.Type, e.Time, lost)
		}
	}
}
