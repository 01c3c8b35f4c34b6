package elect

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/go-zookeeper/zk"
)

// groupMark is the data herald gives a group node: which recipe the group
// holds, so that an observer that finds the group empty still knows a lock
// from an election, and the last voluntary release. Nobody watches a group
// node's data and writing it creates no child, so it fires no waiter's
// watch and no client's listing sees it. herald writes it only when the
// group node is empty or already carries herald's mark, and only over the
// data version the owner expects (see deleteMarked): never over data
// someone else keeps there, even when they wrote it a moment ago.
//
// An owner that resigns or releases deletes its node and writes the mark
// in one transaction. An observer then needs no read to tell why the owner
// went: the listing's parent stat shows the data written (mzxid) in the
// very transaction of the last child change (pzxid), and that only herald's
// release does.
//
// An owner that gives up for another reason (its connection was suspended,
// a client joined that cannot read its node) in a group that may hold no
// office records the reason in the mark as well, but writes it twice in
// its transaction: the group node's data version then moves by two, not
// one, and an observer that sees that reads the mark instead of taking
// the change for a release.
type groupMark struct {
	Herald   int      `json:"herald"`
	Recipe   Recipe   `json:"recipe"`
	Released *Release `json:"released,omitempty"`
	// Withdrawn lists, by sequence, nodes made after Released's (after
	// none, from the group's first, when there is no release) that left
	// without owning: waiters that gave up (see queue.withdraw), the
	// latest maxWithdrawn. A copy that finds nothing below its node then
	// knows that nobody owned between that release and its node, where
	// such a node used to cost it the wait kept for an owner deleted by
	// hand (see accountedBefore).
	Withdrawn []int32 `json:"withdrawn,omitempty"`
	// WithdrawnRuns lists the same nodes as runs of consecutive sequences,
	// [first, last] each, oldest first, and earlier ones Withdrawn no
	// longer holds: a storm of waiters that gave up one after another (a
	// fleet's `herald lock --timeout` from cron while the lock is held) is
	// one run, however long. Withdrawn keeps the latest of them one by one
	// for a herald that reads no runs.
	WithdrawnRuns []seqRun `json:"withdrawn_runs,omitempty"`
}

// seqRun is the sequences first to last, both included.
type seqRun [2]int32

// maxWithdrawn is how many withdrawn nodes a mark lists one by one
// (Withdrawn), and maxWithdrawnRuns how many runs it keeps: more runs of
// waiters that gave up between nodes that did not, without a release
// between, cost the next copy the wait again, as any node left
// unaccounted for does.
const (
	maxWithdrawn     = 32
	maxWithdrawnRuns = 64
)

// decodeMark reads herald's mark (false when b is neither empty nor
// herald's mark).
func decodeMark(b []byte) (groupMark, bool) {
	var m groupMark
	if len(b) == 0 {
		return m, true
	}
	if json.Unmarshal(b, &m) != nil || m.Herald == 0 {
		return groupMark{}, false
	}
	return m, true
}

// withdrawn is every node m names withdrawn, as runs oldest first (see
// joinRuns): the runs, and the nodes listed one by one, which a mark
// written before runs holds alone.
func (m groupMark) withdrawn() []seqRun {
	rs := slices.Clone(m.WithdrawnRuns)
	for _, w := range m.Withdrawn {
		rs = append(rs, seqRun{w, w})
	}
	return joinRuns(rs)
}

// setWithdrawn records rs as m's withdrawn nodes: the latest
// maxWithdrawnRuns runs, and the latest maxWithdrawn nodes one by one.
func (m *groupMark) setWithdrawn(rs []seqRun) {
	rs = joinRuns(rs)
	if len(rs) > maxWithdrawnRuns {
		rs = rs[len(rs)-maxWithdrawnRuns:]
	}
	m.WithdrawnRuns, m.Withdrawn = nil, nil
	if len(rs) == 0 {
		return
	}
	m.WithdrawnRuns = rs
	var w []int32
	for i := len(rs) - 1; i >= 0 && len(w) < maxWithdrawn; i-- {
		for x := rs[i][1]; len(w) < maxWithdrawn; x-- {
			w = append(w, x)
			if x == rs[i][0] {
				break
			}
		}
	}
	slices.Reverse(w)
	m.Withdrawn = w
}

// joinRuns orders rs oldest first (ZooKeeper's counter wraps, so order is
// within half its range) and joins runs that overlap or touch; a run that
// ends before it starts is dropped.
func joinRuns(rs []seqRun) []seqRun {
	rs = slices.DeleteFunc(slices.Clone(rs), func(r seqRun) bool { return SeqLess(r[1], r[0]) })
	slices.SortFunc(rs, func(a, b seqRun) int {
		switch {
		case SeqLess(a[0], b[0]):
			return -1
		case SeqLess(b[0], a[0]):
			return 1
		}
		return 0
	})
	var out []seqRun
	for _, r := range rs {
		if n := len(out); n > 0 && !SeqLess(out[n-1][1]+1, r[0]) {
			if SeqLess(out[n-1][1], r[1]) {
				out[n-1][1] = r[1]
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// runsAfter is the part of rs that comes after seq.
func runsAfter(rs []seqRun, seq int32) []seqRun {
	var out []seqRun
	for _, r := range rs {
		switch {
		case !SeqLess(seq, r[1]): // ends at or before seq
		case SeqLess(seq, r[0]):
			out = append(out, r)
		default:
			out = append(out, seqRun{seq + 1, r[1]})
		}
	}
	return out
}

// keepWithdrawn gives m, a release's mark, the withdrawn nodes of old (the
// mark read just before it is written) that come after m's release: they
// left without owning after its node was made, and a copy made after them
// still needs to know (see accountedBefore). A mark written without that
// read (a busy lock's brief tenure) loses none: a note made before the
// owner's last listing is of a node that listing misses, which the release
// names itself (see goneAbove), and one made after fails the write's
// version check.
func (m *groupMark) keepWithdrawn(old []byte) {
	prev, ok := decodeMark(old)
	if !ok || m.Released == nil {
		return
	}
	if rs, ok := ParseSequence(m.Released.Node); ok {
		m.setWithdrawn(runsAfter(prev.withdrawn(), rs))
	}
}

// withdrawnMark is the group node's data once the waiter whose node has
// sequence seq withdrew: the mark b with seq added to Withdrawn (recipe
// naming the group when b names none). false when b is someone else's
// data, or seq comes before the release b records: nothing to add.
func withdrawnMark(b []byte, seq int32, recipe Recipe) ([]byte, bool) {
	m, ok := decodeMark(b)
	if !ok {
		return nil, false
	}
	if m.Herald == 0 {
		m.Herald = 1
	}
	if !m.Recipe.Known() {
		m.Recipe = recipe
	}
	w := m.withdrawn()
	if m.Released != nil {
		rs, ok := ParseSequence(m.Released.Node)
		if !ok || !SeqLess(rs, seq) {
			return nil, false
		}
		w = runsAfter(w, rs)
	}
	m.setWithdrawn(append(w, seqRun{seq, seq}))
	out, _ := json.Marshal(m)
	return out, true
}

// accountedBefore reports whether m accounts for every node made in the
// group before ours (sequence seq): the release it records (or, with
// none, the group's first node on), then only nodes that withdrew. A
// release on record vouches for its owner and, where its owner waited for
// them (Release.Vouches), for the owners before it; a withdrawn node
// never owned. ZooKeeper numbers a sequential child with the number of
// children created before it, so a number missing from the run is a node
// that may have owned and gone without a release (deleted by hand), and
// the caller waits for it.
// madeOffice: the office made with our node took the number before ours.
func (m groupMark) accountedBefore(seq int32, madeOffice bool) bool {
	var next uint32 // the first number not accounted for
	if m.Released != nil {
		rs, ok := ParseSequence(m.Released.Node)
		if !ok {
			return false
		}
		next = uint32(rs) + 1
	}
	end := uint32(seq)
	if madeOffice {
		end--
	}
	for _, r := range m.withdrawn() { // oldest first
		first, last := uint32(r[0]), uint32(r[1])
		switch {
		case next == end:
			return true
		case SeqLess(int32(last), int32(next)): // all before next
			continue
		case SeqLess(int32(next), int32(first)): // a number nobody accounts for
			return false
		case SeqLess(int32(end), int32(last+1)): // the run reaches ours
			return true
		}
		next = last + 1
	}
	return next == end
}

// markState is whether herald may write a group node's data.
type markState int8

const (
	markUnknown markState = iota
	markHerald            // empty, or herald's mark: writable
	markForeign           // someone else's data
	markDenied            // not ours to write (the group node's ACL)
)

func (q *queue) setMark(m markState) {
	q.mu.Lock()
	q.mark = m
	q.mu.Unlock()
}

// markState is what is known of the group node's data.
func (q *queue) markState() markState {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mark
}

// markKnownHerald reports whether the group node is known to be empty or
// to carry herald's mark.
func (q *queue) markKnownHerald() bool { return q.markState() == markHerald }

// noteGroup learns from a listing's parent stat: an empty group node may
// carry herald's mark (also once someone cleared their data from it).
func (q *queue) noteGroup(st *zk.Stat) {
	if st == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if st.DataLength == 0 && q.mark != markDenied {
		q.mark = markHerald
	}
}

// prefetchMark reads the group node's data in the background when its
// content is not known yet, so that a later release need not read it on
// the handoff's path (a waiter calls it while it waits).
func (q *queue) prefetchMark() {
	q.mu.Lock()
	if q.mark != markUnknown || q.markFetching {
		q.mu.Unlock()
		return
	}
	q.markFetching = true
	q.mu.Unlock()
	q.s.background(func() {
		ctx, cancel := context.WithTimeout(context.Background(), q.s.Timeout())
		defer cancel()
		q.markWritable(ctx)
		q.mu.Lock()
		q.markFetching = false
		q.mu.Unlock()
	})
}

// markWritable reports whether herald may write the group node's data,
// reading it once when its content is not known yet.
func (q *queue) markWritable(ctx context.Context) bool {
	q.mu.Lock()
	m := q.mark
	q.mu.Unlock()
	if m != markUnknown {
		return m == markHerald
	}
	if _, _, _, err := q.readGroupData(ctx); err != nil {
		return false // ask again next time
	}
	return q.markKnownHerald()
}

// markable reports whether group data b is herald's to write over: empty,
// or herald's mark.
func markable(b []byte) bool {
	_, ok := decodeMark(b)
	return ok
}

// noteRecipe remembers the recipe herald's mark on the group node names.
func (q *queue) noteRecipe(r Recipe) {
	q.mu.Lock()
	q.groupRecipe = r
	q.mu.Unlock()
}

// markRecipe is the recipe a release writes into the group's mark: the one
// the mark already names, else the queue's own.
func (q *queue) markRecipe() Recipe {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.groupRecipe.Known() {
		return q.groupRecipe
	}
	return q.recipe
}

// recipeOf is the recipe herald's mark b names, if any.
func recipeOf(b []byte) (Recipe, bool) {
	var m groupMark
	if json.Unmarshal(b, &m) != nil || m.Herald == 0 || !m.Recipe.Known() {
		return "", false
	}
	return m.Recipe, true
}

func markData(r Recipe) []byte {
	b, _ := json.Marshal(groupMark{Herald: 1, Recipe: r})
	return b
}

// voluntary reports whether an owner gave its group up by its own call.
func voluntary(r Reason) bool { return r == ReasonResigned || r == ReasonReleased }

// readGroupRecipe reads herald's mark on a group node; false when the node
// carries none (another client made it) or cannot be read.
func readGroupRecipe(ctx context.Context, conn *zk.Conn, group string) (Recipe, bool) {
	b, _, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return conn.Get(group) })
	if err != nil {
		return "", false
	}
	return recipeOf(b)
}
