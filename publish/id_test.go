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
