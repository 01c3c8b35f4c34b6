package bridge

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// A discoverer's watch that has fired is a change the session heard that
// no group's read covers yet: a child that appeared (a group, maybe with
// an owner already) is observed only once the discoverer has listed its
// root and added it, and a heartbeat's scope covers it before then. A
// heartbeat whose sync ZooKeeper answered after the child was made, taken
// while the discoverer was still listing, confirmed the group as having
// no owner, as the sinks held nothing of it (found by an adversarial
// test). So the heartbeat's proof waits for the discoverers too
// (awaitListings), as it waits for the groups' observers.

// listWatch is the watch one discoverer waits on between its listings.
type listWatch struct {
	ch <-chan zk.Event // nil: it waits on nothing (a fixed path)
	// sent is when the listing that armed ch was asked for.
	sent time.Time
	// parent is the discoverer that started this one for a child it
	// listed (nil for a root given).
	parent *listWatch
	// root is the path listed, and cversion its children's version as
	// listed (-1: none known; rootAbsent: the root was found missing).
	root     string
	cversion int32
	// kick wakes the discoverer to list again (noticeSwallowed).
	kick chan struct{}
}

// firedWatch stands for a watch that fired: a discoverer not listed yet.
var firedWatch = func() <-chan zk.Event {
	c := make(chan zk.Event)
	close(c)
	return c
}()

// listWatches are the bridge's discoverers' watches (Bridge.lists).
type listWatches struct {
	mu sync.Mutex
	m  map[*listWatch]bool
}

// newListWatch registers a discoverer about to start, pending until it
// has listed its root once; register it before it starts, so that a
// proof taken meanwhile waits for it. parent is the discoverer that
// listed its root (nil for a root given).
func (b *Bridge) newListWatch(parent *listWatch) *listWatch {
	w := &listWatch{ch: firedWatch, parent: parent, cversion: -1, kick: make(chan struct{}, 1)}
	b.lists.mu.Lock()
	defer b.lists.mu.Unlock()
	if b.lists.m == nil {
		b.lists.m = map[*listWatch]bool{}
	}
	b.lists.m[w] = true
	return w
}

// waitOn records that the discoverer has handled what it listed of root
// (its children's version cversion), asked for at sent, and now waits on
// ch, the watch that listing armed.
func (b *Bridge) waitOn(w *listWatch, root string, ch <-chan zk.Event, sent time.Time, cversion int32) {
	b.lists.mu.Lock()
	defer b.lists.mu.Unlock()
	w.ch, w.sent, w.root, w.cversion = ch, sent, root, cversion
}

// dropListWatch forgets a discoverer that stopped.
func (b *Bridge) dropListWatch(w *listWatch) {
	b.lists.mu.Lock()
	defer b.lists.mu.Unlock()
	delete(b.lists.m, w)
}

// awaitListings waits until every discoverer has handled all that its
// watches told of before the call (made once ZooKeeper answered the
// proof's sync), or ctx ends (false). A discoverer is caught up once the
// watch its last handled listing armed is seen not to have fired, or
// once it has handled a listing asked for after the call: a request sent
// after the sync's answer reads what the sync saw, at least. Moving past
// the watch seen fired at the call was not enough: the next one, armed
// by the listing still being handled, may have fired before the proof
// too (found by an adversarial test). Each is waited for once, so that
// a root whose children never stop changing holds no heartbeat back; a
// discoverer started for a child its parent listed after the parent was
// caught up is not waited for: that child came after the proof.
func (b *Bridge) awaitListings(ctx context.Context) bool {
	from := time.Now()
	b.noticeSwallowed(ctx)
	done := map[*listWatch]bool{}
	for b.listingPending(from, done) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(2 * time.Millisecond): // polling interval, not ordering
		}
	}
	return true
}

// listingPending reports whether a discoverer not in done is not caught
// up with what its watches told of before from (see awaitListings), and
// adds to done those that are (false: seen, not yet). The zk client
// closes a watch's channel as it delivers its event, in order with the
// answers to later requests, so a channel closed is a watch that fired,
// and one still open at a look after from had not fired before; taking
// its event here takes nothing from the discoverer, which then reads the
// closed channel.
func (b *Bridge) listingPending(from time.Time, done map[*listWatch]bool) bool {
	b.lists.mu.Lock()
	defer b.lists.mu.Unlock()
	pending := false
	// Marked after the look: a child first seen beside its parent was
	// started before the parent was caught up.
	var caught []*listWatch
	for w := range b.lists.m {
		isDone, seen := done[w]
		switch {
		case isDone:
		case !seen && w.parent != nil && done[w.parent], w.sent.After(from), !fired(w.ch):
			caught = append(caught, w)
		default:
			done[w], pending = false, true // seen, not caught up
		}
	}
	for _, w := range caught {
		done[w] = true
	}
	return pending
}

// fired reports whether the watch ch has fired (nil never does).
func fired(ch <-chan zk.Event) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// noticeSwallowed makes each discoverer whose root's children changed
// since it listed them, while its watch did not fire, pending, and wakes
// it to list again. ZooKeeper tells a session no change of a node it may
// no longer READ: a root whose ACL was changed under the bridge was never
// listed again, and the heartbeats confirmed a group made below it as
// having no owner (found by an adversarial test). Its stat needs no
// permission; the listing that follows fails, and holds the rounds back
// until it can be made. So with a root found missing, made since with
// such an ACL: its exists watch was not told either. A pattern's level
// (the children of root/* in root/*/x/*) is looked at too: looking at
// roots alone, one such level made unreadable went unnoticed for good.
// That costs one request a round per discoverer, pipelined
// (swallowedInFlight at a time): levels with a discoverer of their own are
// those with a "*" below them, one per child of the level above.
func (b *Bridge) noticeSwallowed(ctx context.Context) {
	_, s := b.sessionState()
	if s == nil {
		return
	}
	var all []listedAt
	b.lists.mu.Lock()
	for w := range b.lists.m {
		if (w.cversion >= 0 || w.cversion == rootAbsent) && !fired(w.ch) {
			all = append(all, listedAt{w, w.root, w.ch, w.cversion})
		}
	}
	b.lists.mu.Unlock()
	sem := make(chan struct{}, swallowedInFlight)
	var wg sync.WaitGroup
	for _, l := range all {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if rootMoved(ctx, s, l.root, l.cversion) {
				b.kickSwallowed(l)
			} // else unchanged, or not known: the sync's proof stands for it
		}()
	}
	wg.Wait()
}

// swallowedInFlight bounds noticeSwallowed's stats in flight, as the
// snapshots' reads are bounded (elect.Many's workers).
const swallowedInFlight = 32

// listedAt is a discoverer's watch as noticeSwallowed found it.
type listedAt struct {
	w        *listWatch
	root     string
	ch       <-chan zk.Event
	cversion int32
}

// kickSwallowed makes l's discoverer pending and wakes it, unless it moved
// on meanwhile. The stat was answered after any event of the change would
// have been delivered: an unfired watch was told nothing.
func (b *Bridge) kickSwallowed(l listedAt) {
	b.lists.mu.Lock()
	defer b.lists.mu.Unlock()
	if l.w.ch == l.ch && !fired(l.ch) {
		l.w.ch = firedWatch
		select {
		case l.w.kick <- struct{}{}:
		default:
		}
	}
}

// rootAbsent is the cversion a discoverer records for a root found
// missing (listWatch.cversion).
const rootAbsent = -2

// rootMoved reports whether root's children changed since they were
// listed at cversion, or root, found missing (rootAbsent), exists now.
func rootMoved(ctx context.Context, s *elect.Session, root string, cversion int32) bool {
	st, err := statNode(ctx, s.Conn(), root)
	switch {
	case cversion == rootAbsent:
		return err == nil
	case errors.Is(err, zk.ErrNoNode):
		return true
	default:
		return err == nil && st.Cversion != cversion
	}
}
