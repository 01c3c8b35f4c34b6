package bridge

import (
	"context"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
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
// proof taken meanwhile waits for it.
func (b *Bridge) newListWatch() *listWatch {
	w := &listWatch{ch: firedWatch}
	b.lists.mu.Lock()
	defer b.lists.mu.Unlock()
	if b.lists.m == nil {
		b.lists.m = map[*listWatch]bool{}
	}
	b.lists.m[w] = true
	return w
}

// waitOn records that the discoverer has handled what it listed and now
// waits on ch.
func (b *Bridge) waitOn(w *listWatch, ch <-chan zk.Event) {
	b.lists.mu.Lock()
	defer b.lists.mu.Unlock()
	w.ch = ch
}

// dropListWatch forgets a discoverer that stopped.
func (b *Bridge) dropListWatch(w *listWatch) {
	b.lists.mu.Lock()
	defer b.lists.mu.Unlock()
	delete(b.lists.m, w)
}

// awaitListings waits until every discoverer whose watch has fired has
// listed its root since, and set its next watch, or ctx ends (false). Each
// is waited for once, so that a root whose children never stop changing
// holds no heartbeat back: what changed after the call came later than
// the proof anyway. A discoverer started meanwhile, for a child just
// listed, is waited for too: it lists what existed then.
func (b *Bridge) awaitListings(ctx context.Context) bool {
	waited := map[*listWatch]<-chan zk.Event{} // each with the watch it must move past
	for b.listingPending(waited) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(2 * time.Millisecond): // polling interval, not ordering
		}
	}
	return true
}

// listingPending reports whether a discoverer in waited still waits on
// the watch recorded there, or one not in it has a watch that fired,
// which it records. The zk client closes a watch's channel as it delivers
// its event, in order with the answers to later requests, so a closed
// channel is a fired watch; taking its event here takes nothing from the
// discoverer, which then reads the closed channel.
func (b *Bridge) listingPending(waited map[*listWatch]<-chan zk.Event) bool {
	b.lists.mu.Lock()
	defer b.lists.mu.Unlock()
	pending := false
	for w := range b.lists.m {
		if old, ok := waited[w]; ok {
			pending = pending || w.ch == old
			continue
		}
		select {
		case <-w.ch:
			waited[w], pending = w.ch, true
		default:
		}
	}
	return pending
}
