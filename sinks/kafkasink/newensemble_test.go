package kafkasink

import (
	"context"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
)

// TestOwnersTopicNewEnsemble: a snapshot from a new ZooKeeper ensemble
// (new_ensemble, its term and zxid far below the record the owners topic
// holds of the group) is the group's state there whatever came before: a
// follower names its owner, fresh; LastReports, what a bridge starting on
// the topic measures against, reports it; and the new ensemble's next
// changes, their terms still below the old record's, are written by the
// sink that wrote the snapshot and by one started on the topic after it.
// An empty snapshot from a new ensemble leaves its group without an owner
// the same way.
func TestOwnersTopicNewEnsemble(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := hbConfig(t, c)
	s := connected(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now()
	if err := s.WriteHeartbeat(ctx, publish.Heartbeat{Source: "br", State: publish.BridgeActive, Time: now, Confirmed: now, Interval: time.Minute}); err != nil {
		t.Fatal(err)
	}
	writeEvents(t, s, gainFrom("/g", "a", 600, "br"), gainFrom("/e", "x", 700, "br"))
	snap := gainFrom("/g", "b", 5, "br")
	snap.Snapshot = true
	empty := publish.Event{Type: publish.LeaderLost, Group: "/e", Recipe: elect.RecipeElection, Zxid: 3, Snapshot: true, Time: now, Source: "br"}.WithID()
	for _, e := range []*publish.Event{&snap, &empty} {
		one := []publish.Event{*e}
		publish.MarkNewEnsemble(one)
		*e = one[0]
	}
	writeEvents(t, s, snap, empty)
	writeEvents(t, s, handover("/g", "b", 5, "c", 9)...)
	if u := lastOwnerUpdate(t, cfg, "/g"); u.Owner() == nil || u.Owner().Node != "c" || u.Stale {
		t.Errorf("/g after a new ensemble's snapshot of b, then c: %+v; want c, fresh", u)
	}
	if u := lastOwnerUpdate(t, cfg, "/e"); u.Event.Type == "" || u.Owner() != nil || u.Event.Zxid != 3 || u.Stale {
		t.Errorf("/e after a new ensemble's empty snapshot: %+v; want no owner at zxid 3, fresh", u)
	}
	fresh := connected(t, cfg) // a bridge started on the topic since
	reports, err := fresh.LastReports(ctx)
	if err != nil {
		t.Fatal(err)
	}
	el := elect.RecipeElection
	if g, e := reports["/g"], reports["/e"]; g != (publish.LastReport{Owner: "c", OwnerID: "c", Term: 9, Zxid: 9, Recipe: el}) || e != (publish.LastReport{Zxid: 3, Recipe: el}) {
		t.Errorf("LastReports: /g %+v, /e %+v; want c at 9, and no owner at 3", g, e)
	}
	writeEvents(t, fresh, handover("/g", "c", 9, "d", 12)...)
	if u := lastOwnerUpdate(t, cfg, "/g"); u.Owner() == nil || u.Owner().Node != "d" {
		t.Errorf("/g after c handed over to d, written by a sink started since: %+v; want d", u)
	}
}

// handover is from (of fromTerm) resigning for to, whose term is term.
func handover(group, from string, fromTerm int64, to string, term int64) []publish.Event {
	g := gainFrom(group, to, term, "br")
	g.Previous = &publish.Participant{ID: from, Node: from}
	l := publish.Event{Type: publish.LeaderLost, Group: group, Recipe: elect.RecipeElection, Owner: g.Owner, Previous: g.Previous,
		Term: fromTerm, Zxid: term, Reason: elect.ReasonResigned, Time: g.Time, Source: "br"}.WithID()
	return []publish.Event{l, g.WithID()}
}

// lastOwnerUpdate is the last update FollowOwners gives of group before
// it has read the owners topic as it stood.
func lastOwnerUpdate(t *testing.T, cfg Config, group string) OwnerUpdate {
	t.Helper()
	st := followOwners(t, cfg, group)
	defer st.Close()
	var last OwnerUpdate
	for {
		select {
		case u, ok := <-st.C():
			if !ok {
				t.Fatalf("stream ended: %v", st.Err())
			}
			last = u
		case <-st.Synced():
			return last
		case <-time.After(20 * time.Second):
			t.Fatalf("the owners topic was not read within 20s")
		}
	}
}
