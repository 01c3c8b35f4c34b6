package elect

import "context"

// A fixed set of clients taking one lock in turn forms a rotation: each
// queues again right after it releases, so the nodes just below ours and
// two below belong to the same sessions every time, one create later.
// When our last two waits saw that, guess names both nodes (those
// sessions, their next counters, our sequence minus one and minus two)
// and the waiter sets its data watches there without listing first.
//
// A guess saves the listing before the watches, never the proof after
// them: a guessed node may itself be a waiter, so the deletion of either
// sends the waiter to listing, and only a listing makes the node just
// below the only lower one. When the node two below goes, the node just
// below usually owns, and that listing shows it alone below us before it
// releases; its deletion is then the proof, and the handoff to us takes
// no round trip. A cycle costs create, two watches, the listing, the
// owner's watch on its own node and the delete: 6 requests, one more than
// the 5 of a listing before a single watch, but none of them between a
// release and the next owner. The three watches go out together, one
// round trip after the create's.
//
// Only a rotation deeper than two is guessed: with one node below ours,
// listing first costs as much as guessing (create, listing, watch) and
// already proves, where a guess would wait for the listing after the
// release. A wrong guess sets no watch (getData on a missing node leaves
// none); the waiter then lists, keeping the watches set on guessed nodes
// that were there. A miss just below also wastes the guess two below,
// sent with it: two requests more than listing first would cost.
//
// Two clients racing to queue again sometimes swap places. After a miss
// on a guess two waits agreed on, the rotation stays trusted and a later
// wait guesses from the one wait before it; a miss on a guess made on
// trust alone ends the trust until two waits agree again.
type rotation struct {
	waits   [2]behind // newest first
	trusted bool
}

// behind is what sat below one of our waits: the node just below ours
// and the one two below, where they were herald nodes.
type behind struct{ one, two predecessor }

// predecessor is a herald node that sat below ours.
type predecessor struct {
	id      heraldID
	dialect Dialect
	ok      bool
}

// follows reports whether a is the create after b by the same session.
func follows(a, b predecessor) bool {
	return a.ok && b.ok && a.id.session == b.id.session && a.id.nonce == b.id.nonce+1
}

// agreed reports whether our last two waits were behind the same two
// sessions' consecutive nodes.
func (r *rotation) agreed() bool {
	a, b := r.waits[0], r.waits[1]
	return follows(a.one, b.one) && follows(a.two, b.two)
}

// guess names the nodes likely just below t and two below, or false.
func (q *queue) guess(t ticket) (one, two entry, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.guessableLocked() {
		return entry{}, entry{}, false
	}
	last := q.rot.waits[0]
	return q.nextOf(last.one, t.seq-1), q.nextOf(last.two, t.seq-2), true
}

// guessable reports whether the next wait will guess.
func (q *queue) guessable() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.guessableLocked()
}

func (q *queue) guessableLocked() bool {
	last := q.rot.waits[0]
	return last.one.ok && last.two.ok && (q.rot.agreed() || q.rot.trusted)
}

// nextOf names p's session's next node, at sequence seq.
func (q *queue) nextOf(p predecessor, seq int32) entry {
	id := p.id
	id.nonce++
	return entry{name: nodeBase(p.dialect, id, q.prefix()) + FormatSequence(seq), seq: seq}
}

// guessing sets data watches on the guessed nodes (and on our own), in
// one round trip (see watchAll). Both found: watching. A miss leads to
// listing, and so does a failed read, which the listing meets again; a
// watch set on a guessed node is kept, and the listing keeps using it if
// that node is still there, just below ours or two below.
func (w *waiter) guessing(ctx context.Context) waitState {
	one, two, ok := w.q.guess(w.t)
	if !ok {
		return stateListing
	}
	w.below, w.twoBelow = watched{entry: one}, watched{entry: two}
	below, twoBelow, ok, _ := w.watchAll(ctx)
	if ok && below && twoBelow {
		w.seenTwo = two
		return stateWatching
	}
	if ok {
		w.q.missed() // a failed read (or our node gone) says nothing of the guess
	}
	for _, x := range [2]*watched{&w.below, &w.twoBelow} {
		if x.ch == nil {
			*x = watched{} // a missed guess names no node
		}
	}
	return stateListing // which also tells what became of our node
}

// missed forgets the rotation after a guess named a node that is not
// there. Trust survives a miss on a guess two waits agreed on, not a miss
// on a guess made on trust alone.
func (q *queue) missed() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.rot.trusted = q.rot.agreed()
	q.rot.waits = [2]behind{}
}

// remember records the nodes below t in the wait that made it owner: one
// just below (the node whose deletion let t own, if any) and two, the last
// node two below that the wait learned of. Only herald nodes at exactly
// those sequences count.
func (q *queue) remember(t ticket, one, two entry) {
	b := behind{one: predecessorAt(one, t.seq-1), two: predecessorAt(two, t.seq-2)}
	q.mu.Lock()
	q.rot.waits = [2]behind{b, q.rot.waits[0]}
	q.mu.Unlock()
}

// predecessorAt reads e as a herald predecessor if it sits at seq.
func predecessorAt(e entry, seq int32) predecessor {
	var p predecessor
	if e.name != "" && e.seq == seq {
		p.id, p.dialect, p.ok = heraldNode(e.name)
	}
	return p
}
