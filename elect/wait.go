package elect

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
)

// A waiter goes through three states until it owns:
//
//   - listing: read the children; if our node is the lowest, we own. If the
//     group's foreign clients need another dialect than our node's name,
//     replace our node first (they could not order it). Otherwise note the
//     node just below ours, and whether it was the only lower one.
//   - watching: set a data watch on that node and wait for it.
//   - owning: reached only from proof, never from a guess or a data change:
//     the listing showed nothing below us, or the node below us is gone
//     (NodeDeleted, or the read that would set the watch answered NoNode)
//     and it was the only lower node at the last listing. Sequence numbers
//     only grow, so no lower node can appear after a listing.
//
// A data change on the watched node is not a release: nothing herald does
// writes a queue node, so it is someone else's write (an operator's set,
// Curator's Revoker), and the waiter only sets its watch again.
type waiter struct {
	q       *queue
	t       ticket
	data    []byte
	tryOnly bool
	// pred is the node just below ours; onlyLower says it was the only
	// lower node at the last listing. A guessed pred (see rotation) is
	// never onlyLower: its deletion sends us back to listing.
	pred      entry
	onlyLower bool
	watch     <-chan zk.Event
	// moves counts the nodes replaced for a dialect in this wait.
	moves int
}

// maxMoves bounds how often one wait replaces its node because the group's
// foreign clients changed: each move follows a real change of the group,
// so more than this means clients keep arriving that want other names.
const maxMoves = 4

type waitState int

const (
	stateListing waitState = iota
	stateWatching
	stateOwning
)

// wait blocks until w's node owns the queue, and returns the ticket that
// owns (a node replaced for a dialect has a new one). On error the ticket
// names the node to remove, if any.
func (q *queue) wait(ctx context.Context, t ticket, data []byte, tryOnly bool) (ticket, error) {
	w := &waiter{q: q, t: t, data: data, tryOnly: tryOnly}
	state := stateListing
	if !tryOnly {
		if pred, ch := q.tryGuess(ctx, t); ch != nil {
			w.pred, w.watch, state = pred, ch, stateWatching
		}
	}
	for {
		var err error
		switch state {
		case stateListing:
			state, err = w.listing(ctx)
		case stateWatching:
			state, err = w.watching(ctx)
		case stateOwning:
			q.remember(w.t, w.pred)
			return w.t, nil
		}
		if err != nil {
			return w.t, err
		}
	}
}

// listing reads the queue and decides: own, replace our node, or watch the
// node just below ours.
func (w *waiter) listing(ctx context.Context) (waitState, error) {
	es, children, err := w.q.list(ctx)
	if err != nil {
		return stateListing, w.q.retryable(ctx, err)
	}
	idx := slices.IndexFunc(es, func(e entry) bool { return e.name == w.t.name })
	if idx < 0 {
		if err := w.q.s.gone(); err != nil {
			return stateListing, err
		}
		return stateListing, fmt.Errorf("%w: %s", ErrNodeDeleted, w.q.full(w.t.name))
	}
	if moved, err := w.fitDialect(ctx, children); err != nil || moved {
		return stateListing, err
	}
	if idx == 0 {
		return stateOwning, nil
	}
	if w.tryOnly {
		return stateListing, ErrLocked
	}
	w.pred, w.onlyLower, w.watch = es[idx-1], idx == 1, nil
	return stateWatching, nil
}

// watching waits for the node below ours to go.
func (w *waiter) watching(ctx context.Context) (waitState, error) {
	if w.watch == nil {
		found, ch, err := w.q.watchNode(ctx, w.pred.name)
		switch {
		case err != nil:
			return stateListing, w.q.retryable(ctx, err)
		case !found:
			return w.predGone(), nil
		}
		w.watch = ch
	}
	select {
	case ev := <-w.watch:
		w.watch = nil
		switch {
		case ev.Type == zk.EventNodeDeleted:
			return w.predGone(), nil
		case ev.Err != nil && expired(ev.Err):
			return stateListing, ErrSessionLost
		case ev.Type == zk.EventNotWatching:
			if err := w.q.s.gone(); err != nil {
				return stateListing, err
			}
			return stateListing, nil
		}
		// NodeDataChanged: someone wrote the node. Watch it again.
		return stateWatching, nil
	case <-ctx.Done():
		return stateListing, ctx.Err()
	case <-w.q.s.Done():
		return stateListing, w.q.s.Err()
	}
}

// predGone is where a waiter goes once the node below it is gone: owning
// when that node was the only lower one, else listing again.
func (w *waiter) predGone() waitState {
	if w.onlyLower {
		return stateOwning
	}
	return stateListing
}

// fitDialect makes sure every foreign client in the group can order our
// node: when they need another dialect than our node's, our node is
// replaced by one named in theirs, at the end of the queue. Right after a
// create that is where our node was anyway; later, a foreign client that
// could not see our node has queued as if it were not there, and we go
// behind it. A group whose clients need different dialects is refused. A
// forced dialect is never changed.
func (w *waiter) fitDialect(ctx context.Context, children []string) (bool, error) {
	if w.q.forced() {
		return false, nil
	}
	others := slices.DeleteFunc(slices.Clone(children), func(c string) bool { return c == w.t.name })
	d, err := groupDialect(w.q.recipe, others)
	if err != nil {
		return false, fmt.Errorf("elect: %s: %w", w.q.parent, err)
	}
	w.q.learnDialect(d)
	if d == w.t.dialect || !hasNeeds(others) {
		return false, nil
	}
	if w.moves++; w.moves > maxMoves {
		return false, fmt.Errorf("%w: %s: foreign clients keep joining that need other node names than ours (%d replacements); give each client its own group or force a dialect", ErrUnsafeGroup, w.q.parent, maxMoves)
	}
	if err := w.q.remove(ctx, w.t.name); err != nil {
		return false, w.q.retryable(ctx, err)
	}
	old := w.t.name
	w.t = ticket{}
	t, err := w.q.enqueue(ctx, w.data)
	if err != nil {
		return false, err
	}
	w.q.s.log.Debug("replaced our queue node to fit the group's dialect", "group", w.q.parent, "old", old, "new", t.name, "dialect", d)
	w.t = t
	return true, nil
}

// hasNeeds reports whether any child imposes a dialect.
func hasNeeds(children []string) bool {
	return slices.ContainsFunc(children, func(c string) bool {
		_, ok, _ := needOf(c)
		return ok
	})
}
