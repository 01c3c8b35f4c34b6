package elect

import (
	"context"
	"encoding/json"

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
	var g groupMark
	return len(b) == 0 || json.Unmarshal(b, &g) == nil && g.Herald != 0
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
