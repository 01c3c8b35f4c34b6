package publish

import (
	"reflect"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

func part(id string, seq int32, czxid int64) *elect.Participant {
	return &elect.Participant{ID: id, Node: "n_" + id, Session: 0x100 + int64(seq), Sequence: seq, Czxid: czxid}
}

// brief is what a translate test checks of each event.
type brief struct {
	Type     Type
	Owner    string // node, "" when nil
	Previous string
	Cand     string
	Term     int64
	Snapshot bool
	Reason   elect.Reason
}

func briefs(events []Event) []brief {
	node := func(p *Participant) string {
		if p == nil {
			return ""
		}
		return p.Node
	}
	out := make([]brief, len(events))
	for i, e := range events {
		out[i] = brief{e.Type, node(e.Owner), node(e.Previous), node(e.Candidate), e.Term, e.Snapshot, e.Reason}
	}
	return out
}

func TestTranslate(t *testing.T) {
	a, b, c := part("a", 1, 101), part("b", 2, 102), part("c", 3, 103)
	queue := []elect.Participant{*a, *b, *c}
	el, lk := elect.RecipeElection, elect.RecipeLock
	for _, tc := range []struct {
		name string
		in   elect.Change
		want []brief
	}{
		{"snapshot election ready", elect.Change{Kind: elect.Snapshot, Recipe: el, Owner: a, Queue: queue, Ready: true}, []brief{
			{LeaderElected, "n_a", "", "", 101, true, ""},
			{LeaderReady, "n_a", "", "", 101, true, ""},
			{CandidateJoined, "n_a", "", "n_b", 101, true, ""},
			{CandidateJoined, "n_a", "", "n_c", 101, true, ""},
		}},
		{"snapshot lock ignores ready", elect.Change{Kind: elect.Snapshot, Recipe: lk, Owner: b, Queue: queue[1:], Ready: true}, []brief{
			{LockAcquired, "n_b", "", "", 102, true, ""},
			{CandidateJoined, "n_b", "", "n_c", 102, true, ""},
		}},
		{"snapshot no owner", elect.Change{Kind: elect.Snapshot, Recipe: el}, []brief{
			{LeaderLost, "", "", "", 0, true, elect.ReasonUnknown},
		}},
		{"snapshot no owner lock", elect.Change{Kind: elect.Snapshot, Recipe: lk}, []brief{
			{LockReleased, "", "", "", 0, true, elect.ReasonUnknown},
		}},
		{"owner changed", elect.Change{Kind: elect.OwnerChanged, Recipe: el, Previous: a, Owner: b, Reason: elect.ReasonSessionExpired}, []brief{
			{LeaderLost, "n_b", "n_a", "", 101, false, elect.ReasonSessionExpired},
			{LeaderElected, "n_b", "n_a", "", 102, false, ""},
		}},
		{"first owner", elect.Change{Kind: elect.OwnerChanged, Recipe: lk, Owner: a}, []brief{
			{LockAcquired, "n_a", "", "", 101, false, ""},
		}},
		{"last owner gone, reason unknown", elect.Change{Kind: elect.OwnerChanged, Recipe: lk, Previous: c}, []brief{
			{LockReleased, "", "n_c", "", 103, false, elect.ReasonUnknown},
		}},
		{"ready", elect.Change{Kind: elect.Ready, Recipe: el, Owner: a}, []brief{
			{LeaderReady, "n_a", "", "", 101, false, ""},
		}},
		{"ready without owner", elect.Change{Kind: elect.Ready, Recipe: el}, nil},
		{"joined", elect.Change{Kind: elect.Joined, Recipe: el, Owner: a, Candidate: c}, []brief{
			{CandidateJoined, "n_a", "", "n_c", 101, false, ""},
		}},
		{"left", elect.Change{Kind: elect.Left, Recipe: el, Owner: a, Candidate: c, Reason: elect.ReasonDeleted}, []brief{
			{CandidateLeft, "n_a", "", "n_c", 101, false, elect.ReasonDeleted},
		}},
		{"unknown", elect.Change{Kind: elect.Unknown, Recipe: el, Owner: a}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Group, tc.in.Zxid, tc.in.Gap, tc.in.Hazard = "/jobs/nightly", 500, true, "a client cannot read n_a"
			now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
			got := Translate(tc.in, "bridge-1", now)
			if g := briefs(got); !reflect.DeepEqual(g, tc.want) && !(len(g) == 0 && len(tc.want) == 0) {
				t.Fatalf("got\n%+v\nwant\n%+v", g, tc.want)
			}
			for _, e := range got {
				if err := e.Validate(); err != nil {
					t.Errorf("%s: %v", e.Type, err)
				}
				if e.ID != e.WithID().ID || e.Group != "/jobs/nightly" || e.Zxid != 500 || !e.Gap || e.Hazard != tc.in.Hazard ||
					e.Source != "bridge-1" || !e.Time.Equal(now) || e.Recipe != tc.in.Recipe {
					t.Errorf("%s: common fields wrong: %+v", e.Type, e)
				}
			}
		})
	}
}

// A change observed twice has the same ids. A snapshot of a state
// already published is another bridge's sighting of its owner, with an id
// of its own, but its change (WithChangeID: a standby's held copy) and its
// candidates stream the ids they were published with, so JetStream and
// followers drop them.
func TestTranslateIDsAreDeterministic(t *testing.T) {
	a, b := part("a", 1, 101), part("b", 2, 102)
	now := time.Now()
	streamed := append(
		Translate(elect.Change{Kind: elect.OwnerChanged, Group: "/g", Recipe: elect.RecipeElection, Owner: a, Zxid: 101}, "x", now),
		Translate(elect.Change{Kind: elect.Joined, Group: "/g", Recipe: elect.RecipeElection, Owner: a, Candidate: b, Zxid: 102}, "x", now)...)
	snap := Translate(elect.Change{Kind: elect.Snapshot, Group: "/g", Recipe: elect.RecipeElection, Owner: a,
		Queue: []elect.Participant{*a, *b}, Zxid: 102}, "y", now.Add(time.Hour))
	if len(snap) != 2 || snap[0].WithChangeID().ID != streamed[0].ID || snap[1].ID != streamed[1].ID {
		t.Fatalf("snapshot change ids %v differ from streamed %v", []string{snap[0].WithChangeID().ID, snap[1].ID}, ids(streamed))
	}
	if snap[0].ID == streamed[0].ID {
		t.Fatal("bridge y's sighting of the owner has the id of the change bridge x published: the stream drops it")
	}
	if streamed[0].ID == streamed[1].ID {
		t.Fatal("elected and joined share an id")
	}
	// Two "no owner" snapshots of different states differ; one bridge's of
	// the same state agree; two bridges' are each a sighting.
	e1 := Translate(elect.Change{Kind: elect.Snapshot, Group: "/g", Recipe: elect.RecipeElection, Zxid: 90}, "y", now)
	e2 := Translate(elect.Change{Kind: elect.Snapshot, Group: "/g", Recipe: elect.RecipeElection, Zxid: 200}, "y", now)
	e3 := Translate(elect.Change{Kind: elect.Snapshot, Group: "/g", Recipe: elect.RecipeElection, Zxid: 200}, "y", now.Add(time.Minute))
	e4 := Translate(elect.Change{Kind: elect.Snapshot, Group: "/g", Recipe: elect.RecipeElection, Zxid: 200}, "z", now)
	if e1[0].ID == e2[0].ID || e2[0].ID != e3[0].ID || e2[0].ID == e4[0].ID || e2[0].WithChangeID().ID != e4[0].WithChangeID().ID {
		t.Fatalf("no-owner ids: zxid 90 %s, zxid 200 %s, %s and (z) %s", e1[0].ID, e2[0].ID, e3[0].ID, e4[0].ID)
	}
}

func ids(es []Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}
