package elect

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
)

// TestAccountedBefore: a copy that finds nothing below its node is vouched
// for only by an unbroken run from the last release on record (or from the
// group's first node, with none) to the number before its own, every
// number in between a withdrawal; across a wrap of ZooKeeper's counter too.
func TestAccountedBefore(t *testing.T) {
	node := func(seq int32) *Release { return &Release{Node: "lock-" + FormatSequence(seq)} }
	for _, tc := range []struct {
		name       string
		m          groupMark
		seq        int32
		madeOffice bool
		want       bool
	}{
		{"the release just before", groupMark{Released: node(4)}, 5, false, true},
		{"the release two before, nothing said of the one between", groupMark{Released: node(3)}, 5, false, false},
		{"the release, then a withdrawal", groupMark{Released: node(3), Withdrawn: []int32{4}}, 5, false, true},
		{"the release, then a gap, then a withdrawal", groupMark{Released: node(2), Withdrawn: []int32{4}}, 5, false, false},
		{"withdrawals out of order", groupMark{Released: node(1), Withdrawn: []int32{4, 2, 3}}, 5, false, true},
		{"the office made with our node took the number before ours", groupMark{Released: node(3), Withdrawn: []int32{4}}, 6, true, true},
		{"no release, every node before ours withdrew", groupMark{Withdrawn: []int32{0, 1}}, 2, false, true},
		{"no release, the first node said nothing", groupMark{Withdrawn: []int32{1}}, 2, false, false},
		{"the group's first node", groupMark{}, 0, false, true},
		{"a withdrawal after ours proves nothing", groupMark{Released: node(3), Withdrawn: []int32{5}}, 5, false, false},
		{"across the counter's wrap", groupMark{Released: node(math.MaxInt32), Withdrawn: []int32{math.MinInt32}}, math.MinInt32 + 1, false, true},
		{"across the wrap, a gap", groupMark{Released: node(math.MaxInt32 - 1), Withdrawn: []int32{math.MinInt32}}, math.MinInt32 + 1, false, false},
	} {
		if got := tc.m.accountedBefore(tc.seq, tc.madeOffice); got != tc.want {
			t.Errorf("%s: accountedBefore(%d) = %v, want %v", tc.name, tc.seq, got, tc.want)
		}
	}
}

// TestWithdrawnMark: a withdrawal adds its number to herald's mark (making
// one over empty data), keeps the release and recipe, forgets numbers
// before the release, keeps the latest maxWithdrawn, and writes nothing
// over someone else's data or for a node before the release.
func TestWithdrawnMark(t *testing.T) {
	read := func(b []byte) groupMark {
		t.Helper()
		var m groupMark
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	b, ok := withdrawnMark(nil, 7, RecipeLock)
	if m := read(b); !ok || m.Herald != 1 || m.Recipe != RecipeLock || !slices.Equal(m.Withdrawn, []int32{7}) {
		t.Errorf("over empty data: %s %v", b, ok)
	}
	old, _ := json.Marshal(groupMark{Herald: 1, Recipe: RecipeElection, Released: &Release{Node: "n_" + FormatSequence(5)}, Withdrawn: []int32{3, 6}})
	b, ok = withdrawnMark(old, 8, RecipeLock)
	if m := read(b); !ok || m.Recipe != RecipeElection || m.Released == nil || !slices.Equal(m.Withdrawn, []int32{6, 8}) {
		t.Errorf("over a mark: %s %v; want the election's, its release, withdrawn [6 8]", b, ok)
	}
	if _, ok := withdrawnMark(old, 4, RecipeLock); ok {
		t.Error("a node before the release on record was noted")
	}
	if _, ok := withdrawnMark([]byte("someone else's"), 8, RecipeLock); ok {
		t.Error("a withdrawal was written over someone else's data")
	}
	var many []byte
	for i := range int32(maxWithdrawn + 5) {
		many, _ = withdrawnMark(many, i, RecipeLock)
	}
	if m := read(many); len(m.Withdrawn) != maxWithdrawn || m.Withdrawn[len(m.Withdrawn)-1] != maxWithdrawn+4 {
		t.Errorf("after %d withdrawals the mark lists %v; want the latest %d", maxWithdrawn+5, m.Withdrawn, maxWithdrawn)
	}
}

// TestKeepWithdrawn: a release read over the mark keeps the withdrawals
// after its own node, and only those.
func TestKeepWithdrawn(t *testing.T) {
	old, _ := json.Marshal(groupMark{Herald: 1, Withdrawn: []int32{2, 5, 9}})
	m := groupMark{Herald: 1, Released: &Release{Node: "lock-" + FormatSequence(4)}}
	m.keepWithdrawn(old)
	if !slices.Equal(m.Withdrawn, []int32{5, 9}) {
		t.Errorf("kept %v, want [5 9]", m.Withdrawn)
	}
	m = groupMark{Herald: 1, Released: &Release{Node: "lock-" + FormatSequence(4)}}
	m.keepWithdrawn([]byte("someone else's"))
	if m.Withdrawn != nil {
		t.Errorf("kept %v from someone else's data", m.Withdrawn)
	}
}
