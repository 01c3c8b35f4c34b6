package bridge

import (
	"testing"

	"github.com/zkherald/herald/publish"
)

// TestHolds: what a store's last report must say for a standby's dropped
// events of a group to count as stored by the bridge before it.
func TestHolds(t *testing.T) {
	left := droppedState{changed: true, gained: true, owner: "n_0000000003", term: 130, zxid: 131}
	empty := droppedState{changed: true, zxid: 40} // only a snapshot of an empty group
	emptied := droppedState{changed: true, gained: true, zxid: 140}
	// a group found gone, its owner's end undated (zxid 0)
	gone := droppedState{changed: true}
	for _, c := range []struct {
		name string
		r    publish.LastReport
		ok   bool
		d    droppedState
		want bool
	}{
		{"a later state", publish.LastReport{Owner: "n_0000000009", Term: 200, Zxid: 200}, true, left, true},
		{"the same tenure", publish.LastReport{Owner: "n_0000000003", Term: 130, Zxid: 130}, true, left, true},
		{"the same name, another tenure (a group made again)", publish.LastReport{Owner: "n_0000000003", Term: 100, Zxid: 100}, true, left, false},
		{"the name without a term", publish.LastReport{Owner: "n_0000000003", Zxid: 100}, true, left, false},
		{"an older owner", publish.LastReport{Owner: "n_0000000002", Term: 90, Zxid: 90}, true, left, false},
		{"nothing, for an owner", publish.LastReport{}, false, left, false},
		{"nothing, for a group only seen empty", publish.LastReport{}, false, empty, true},
		{"no owner, for a group only seen empty", publish.LastReport{Zxid: 10}, true, empty, true},
		{"an owner, for a group seen empty since", publish.LastReport{Owner: "n_0000000001", Term: 10, Zxid: 10}, true, empty, false},
		{"nothing, for a group emptied after an owner", publish.LastReport{}, false, emptied, false},
		{"an older no owner, for a group emptied after an owner", publish.LastReport{Zxid: 100}, true, emptied, false},
		{"the emptying stored", publish.LastReport{Zxid: 140}, true, emptied, true},
		{"the gone owner, for a group found gone (zxid 0)", publish.LastReport{Owner: "n_0000000003", Term: 130, Zxid: 130}, true, gone, false},
		{"no owner, for a group found gone", publish.LastReport{Zxid: 150}, true, gone, true},
	} {
		if got := holds(c.r, c.ok, c.d); got != c.want {
			t.Errorf("%s: holds(%+v, %t, %+v) = %t, want %t", c.name, c.r, c.ok, c.d, got, c.want)
		}
	}
}
