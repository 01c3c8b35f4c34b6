package elect

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// A fixed set of clients taking one lock in turn forms a rotation: each
// queues again right after it releases, so a waiter's predecessor is the
// same session every time, one create later. When our last two waits saw
// that, guess names the node that should sit just below ours (that
// session, its next counter, our sequence minus one) and the waiter sets
// its data watch there without listing the children first.
//
// A guess saves the listing before the watch, never the proof after it:
// a guessed predecessor may itself be a waiter, so its deletion sends the
// waiter back to listing, and only a listing that shows nothing below us
// makes us owner. In a deep queue that is one request fewer per handoff
// than listing first (create, watch, list, delete: 4 instead of 5). A
// wrong guess costs one request and sets no watch (getData on a missing
// node leaves none).
//
// Two clients racing to queue again sometimes swap places. After a miss
// on a guess two waits agreed on, the rotation stays trusted and the next
// wait guesses from the one predecessor its listing showed; a second miss
// in a row ends the trust until two waits agree again.
type rotation struct {
	preds   [2]predecessor
	trusted bool
}

// predecessor is a herald node that sat just below ours.
type predecessor struct {
	id      heraldID
	dialect Dialect
	ok      bool
}

// agreed reports whether our last two waits were behind one session's
// consecutive nodes.
func (r *rotation) agreed() bool {
	a, b := r.preds[0], r.preds[1]
	return a.ok && b.ok && a.id.session == b.id.session && a.id.nonce == b.id.nonce+1
}

// guess names the node likely just below t, or false.
func (q *queue) guess(t ticket) (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	a := q.rot.preds[0]
	if !a.ok || !q.rot.agreed() && !q.rot.trusted {
		return "", false
	}
	next := a.id
	next.nonce++
	return nodeBase(a.dialect, next, q.prefix()) + FormatSequence(t.seq-1), true
}

// tryGuess sets a data watch on the guessed predecessor. It returns a nil
// channel when there is no guess or it missed; the waiter then lists.
func (q *queue) tryGuess(ctx context.Context, t ticket) (entry, <-chan zk.Event) {
	name, ok := q.guess(t)
	if !ok {
		return entry{}, nil
	}
	found, ch, err := q.watchNode(ctx, name)
	q.mu.Lock()
	defer q.mu.Unlock()
	if err == nil && found {
		return entry{name: name, seq: t.seq - 1}, ch
	}
	// Trust survives a miss on a guess two waits agreed on, not a miss on
	// a guess made on trust alone.
	q.rot.trusted = q.rot.agreed()
	q.rot.preds = [2]predecessor{}
	return entry{}, nil
}

// remember records the predecessor whose deletion let t own (none when t
// owned at once). Only a herald node just below t counts.
func (q *queue) remember(t ticket, pred entry) {
	var p predecessor
	if pred.name != "" && pred.seq == t.seq-1 {
		p.id, p.dialect, p.ok = heraldNode(pred.name)
	}
	q.mu.Lock()
	q.rot.preds = [2]predecessor{p, q.rot.preds[0]}
	q.mu.Unlock()
}
