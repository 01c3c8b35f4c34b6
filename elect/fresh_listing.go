package elect

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// A waiter next in line (the owner the only node below it) whose owner's
// session node it saw keeps its saved listing of the group
// (t.prevListing) fresh: it watches the group's children and lists again
// on each change. The session end's proof (see ownersEndAt) accounts for
// every child change since that listing, and a copy behind that came or
// went since (its session ended, or it gave up) leaves the owner's end
// untold, so the wait took its bound. Listed again after each change,
// only a change in the moments between the owner's end and our look
// costs the quick handover. Only the one waiter next in line watches, so
// a change makes one listing, not a herd of them. The watch stays set
// until a change fires it; one still set when the wait ends fires
// unread with the group's next change.
//
// A fresher listing proves no more than an old one: it too must show the
// owner's node, and every change after it is still accounted for.

// keepsListingFresh reports whether the waiter keeps its saved listing
// fresh: next in line, behind an owner whose session node it trusts.
func (w *waiter) keepsListingFresh() bool {
	p := w.t.prevSession
	return w.onlyLower && p != nil && p.ok.Load() && w.below.name == w.t.prev
}

// watchListing lists the group again with a watch on its children, when
// the waiter keeps its listing fresh and holds no such watch, and saves
// the listing when it still shows the owner's node and ours. A failed
// listing keeps the saved one and sets no watch: it proves less, never
// more.
func (w *waiter) watchListing(ctx context.Context) {
	if w.kids != nil || !w.keepsListingFresh() {
		return
	}
	type listing struct {
		c  []string
		st *zk.Stat
		ch <-chan zk.Event
	}
	l, err := call(ctx, func() (listing, error) {
		c, st, ch, err := w.q.s.Conn().ChildrenW(w.q.parent)
		return listing{c, st, ch}, err
	})
	if err != nil {
		return
	}
	w.kids = l.ch
	if !slices.Contains(l.c, w.t.prev) || !slices.Contains(l.c, w.t.name) {
		return // the owner's gone (its watch tells), or ours
	}
	_, next := parseListing(l.c, l.st.Cversion)
	w.t.prevListing = groupListing{children: l.c, next: next}
	if f := listingSaved.Load(); f != nil {
		(*f)(l.c, next)
	}
}

// listingSaved, when set (by tests), is told of each listing a waiter
// kept fresh saved: the group's children then, and its counter.
var listingSaved atomic.Pointer[func(children []string, next int32)]
