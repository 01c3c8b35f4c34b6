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
	read := func(b []byte) groupMark { return readMarkData(t, b) }
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

// TestWithdrawnRuns: a storm of waiters that give up one after another is
// one run on the mark, however long, so the next copy finds every node
// before its own accounted for; the nodes listed one by one stay the
// latest maxWithdrawn, for a herald that reads no runs; a release keeps
// only the part of a run after its own node; and a mark written before
// runs (one by one alone) still counts.
func TestWithdrawnRuns(t *testing.T) {
	read := func(b []byte) groupMark { return readMarkData(t, b) }
	rel := func(seq int32) *Release { return &Release{Node: "lock-" + FormatSequence(seq)} }
	start, _ := json.Marshal(groupMark{Herald: 1, Recipe: RecipeLock, Released: rel(9)})
	b := start
	const storm = 500
	for seq := int32(11); seq < 11+storm; seq++ { // 10 holds the lock throughout
		b, _ = withdrawnMark(b, seq, RecipeLock)
	}
	m := read(b)
	if !slices.Equal(m.WithdrawnRuns, []seqRun{{11, 10 + storm}}) || len(m.Withdrawn) != maxWithdrawn || m.Withdrawn[maxWithdrawn-1] != 10+storm {
		t.Errorf("after %d withdrawals: runs %v, one by one %v; want one run and the latest %d", storm, m.WithdrawnRuns, m.Withdrawn, maxWithdrawn)
	}
	if len(b) > 1024 {
		t.Errorf("the mark after %d withdrawals is %d bytes", storm, len(b))
	}
	// The holder, 10, releases over it: the whole run comes after it.
	after := groupMark{Herald: 1, Recipe: RecipeLock, Released: rel(10)}
	after.keepWithdrawn(b)
	if !after.accountedBefore(11+storm, false) {
		t.Errorf("the copy after the storm is not accounted for: runs %v", after.WithdrawnRuns)
	}
	if after.accountedBefore(12+storm, false) {
		t.Error("a node after the storm that said nothing was taken as accounted for")
	}
	// A release in the middle of a run keeps the run's part after it.
	mid := groupMark{Herald: 1, Released: rel(100)}
	mid.keepWithdrawn(b)
	if !slices.Equal(mid.WithdrawnRuns, []seqRun{{101, 10 + storm}}) {
		t.Errorf("a release at 100 kept %v; want [[101 %d]]", mid.WithdrawnRuns, 10+storm)
	}
	// Runs that touch join; a gap keeps them apart, and a copy behind the
	// gap waits.
	g := groupMark{Released: rel(1), WithdrawnRuns: []seqRun{{5, 6}, {2, 3}}, Withdrawn: []int32{4, 8}}
	if got := g.withdrawn(); !slices.Equal(got, []seqRun{{2, 6}, {8, 8}}) {
		t.Errorf("withdrawn() = %v; want [[2 6] [8 8]]", got)
	}
	if !g.accountedBefore(7, false) || g.accountedBefore(9, false) {
		t.Errorf("with 7 unaccounted: accountedBefore(7) %v (want true), (9) %v (want false)", g.accountedBefore(7, false), g.accountedBefore(9, false))
	}
	// Across the counter's wrap.
	w := groupMark{Released: rel(math.MaxInt32 - 2), WithdrawnRuns: []seqRun{{math.MaxInt32 - 1, math.MinInt32 + 1}}}
	if !w.accountedBefore(math.MinInt32+2, false) {
		t.Errorf("a run across the wrap: not accounted for (%v)", w.withdrawn())
	}
	// More runs than kept: the oldest go.
	var many []seqRun
	for i := range int32(maxWithdrawnRuns + 3) {
		many = append(many, seqRun{20 + 2*i, 20 + 2*i})
	}
	var k groupMark
	k.setWithdrawn(many)
	if len(k.WithdrawnRuns) != maxWithdrawnRuns || k.WithdrawnRuns[0] != many[3] {
		t.Errorf("kept %d runs from %v; want the latest %d", len(k.WithdrawnRuns), k.WithdrawnRuns[0], maxWithdrawnRuns)
	}
}

// readMarkData decodes a group node's data as herald's mark.
func readMarkData(t *testing.T, b []byte) groupMark {
	t.Helper()
	var m groupMark
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
