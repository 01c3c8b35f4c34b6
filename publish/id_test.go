package publish

import (
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// An owner event's id is group, node and type; for a node whose name could
// come back in a group made again (the classic recipe's, Kazoo's, a
// session's), the term too, so that a new tenure under an old name is not
// a duplicate of the old one. Names made once per create keep the id they
// always had.
func TestOwnerEventIDs(t *testing.T) {
	const g = "/locks/a"
	for _, c := range []struct {
		node   string
		recurs bool
	}{
		{"lock-0000000000", true},
		{"n_0000000003", true},
		{"9f8e7d6c5b4a39281706f5e4d3c2b1a0__lock__0000000000", true},
		{"candidate-0x1a2b_0000000004", true},
		{"_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-lock-0000000000", false},
		{"_c_3f2504e04f8911d39a0c0305e82c3301-lock-0000000000", false},
		{"_c_01000074-2eec-0000-0000-000168726c6c-lock-0000000000", false},
	} {
		for _, typ := range []Type{LockAcquired, LockReleased} {
			e := func(term int64) Event {
				e := Event{Type: typ, Group: g, Term: term, Owner: &Participant{Node: c.node}}
				if typ.Loses() {
					e.Owner, e.Previous = nil, &Participant{Node: c.node}
				}
				return e.WithID()
			}
			a, b := e(100), e(200)
			switch {
			case c.recurs && a.ID == b.ID:
				t.Errorf("%s %s: terms 100 and 200 share id %s; a tenure under a name that came back would be dropped", typ, c.node, a.ID)
			case !c.recurs && (a.ID != b.ID || a.ID != MakeID(g, c.node, typ)):
				t.Errorf("%s %s: id %s / %s; want %s, group, node and type alone", typ, c.node, a.ID, b.ID, MakeID(g, c.node, typ))
			}
		}
	}
}

// A candidate's events are told apart across a group made again by the
// group node's czxid, for names that could come back; other names keep the
// id of group, node and type. Translate carries the czxid from the change.
func TestCandidateEventIDs(t *testing.T) {
	const g = "/locks/a"
	for _, c := range []struct {
		node   string
		recurs bool
	}{
		{"lock-0000000001", true},
		{"9f8e7d6c5b4a39281706f5e4d3c2b1a0__lock__0000000001", true},
		{"_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-lock-0000000001", false},
	} {
		for _, kind := range []elect.ChangeKind{elect.Joined, elect.Left} {
			id := func(groupCzxid int64) (string, Type) {
				es := Translate(elect.Change{Kind: kind, Group: g, Recipe: elect.RecipeLock, Candidate: &elect.Participant{Node: c.node}, GroupCzxid: groupCzxid}, "t", time.Time{})
				if len(es) != 1 {
					t.Fatalf("%s %s: %d events, want 1", kind, c.node, len(es))
				}
				return es[0].ID, es[0].Type
			}
			a, typ := id(100)
			b, _ := id(200)
			switch {
			case c.recurs && a == b:
				t.Errorf("%s %s: groups made at 100 and 200 share id %s; the second group's candidate would be dropped", typ, c.node, a)
			case !c.recurs && (a != b || a != MakeID(g, c.node, typ)):
				t.Errorf("%s %s: id %s / %s; want %s, group, node and type alone", typ, c.node, a, b, MakeID(g, c.node, typ))
			}
		}
	}
}

// A snapshot's owner event and leader.ready are a bridge's sighting: the
// same sighting sent again keeps its id (a retry, a restart finding the
// group as it left it), while another bridge's, or one after later
// changes, has its own, so that a stream deduplicating by id stores it.
// The change itself keeps one id whoever observes it, and so does a
// snapshot's candidate.joined and a standby's held copy (WithChangeID).
func TestSnapshotSightingIDs(t *testing.T) {
	const g = "/svc/a"
	owner := &elect.Participant{Node: "_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-n_0000000001", Czxid: 40}
	waiter := elect.Participant{Node: "_c_3f2504e0-4f89-11d3-9a0c-0305e82c3302-n_0000000002", Czxid: 41}
	snap := func(src string, zxid int64, o *elect.Participant) []Event {
		c := elect.Change{Kind: elect.Snapshot, Group: g, Recipe: elect.RecipeElection, Owner: o, Zxid: zxid, Ready: o != nil}
		if o != nil {
			c.Queue = []elect.Participant{*o, waiter}
		}
		return Translate(c, src, time.Time{})
	}
	live := func(src string) []Event {
		return Translate(elect.Change{Kind: elect.OwnerChanged, Group: g, Recipe: elect.RecipeElection, Owner: owner, Zxid: 40}, src, time.Time{})
	}
	if a, b := live("bridge-a")[0].ID, live("bridge-b")[0].ID; a != b {
		t.Errorf("one change seen by two bridges: ids %s and %s, want one", a, b)
	}
	a1, a2 := snap("bridge-a", 41, owner), snap("bridge-a", 41, owner)
	b1, a3 := snap("bridge-b", 41, owner), snap("bridge-a", 50, owner)
	for i := range 2 { // the owner event, then leader.ready
		if a1[i].ID != a2[i].ID {
			t.Errorf("%s: the same sighting twice has ids %s and %s", a1[i].Type, a1[i].ID, a2[i].ID)
		}
		if a1[i].ID == b1[i].ID || a1[i].ID == a3[i].ID {
			t.Errorf("%s: another bridge's sighting, or one after later changes, shares id %s", a1[i].Type, a1[i].ID)
		}
		if held := a1[i].WithChangeID(); held.ID != b1[i].WithChangeID().ID || held.ID == a1[i].ID {
			t.Errorf("%s: held copies (WithChangeID) of two bridges' sightings differ, or equal the sighting", a1[i].Type)
		}
	}
	if a1[0].WithChangeID().ID != live("x")[0].ID {
		t.Errorf("a held snapshot's id is not its change's: a takeover would store again what was published")
	}
	if a1[2].Type != CandidateJoined || a1[2].ID != b1[2].ID {
		t.Errorf("a snapshot's candidate (%s) is a sighting of its own: ids %s and %s", a1[2].Type, a1[2].ID, b1[2].ID)
	}
	if na, nb := snap("bridge-a", 60, nil)[0], snap("bridge-b", 60, nil)[0]; na.ID == nb.ID {
		t.Errorf("two bridges' sightings of no owner share id %s", na.ID)
	}
}
