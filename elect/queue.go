package elect

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// queue is the one core behind Election and Lock: SEQUENCE|EPHEMERAL nodes
// under a parent, the lowest owns, each waiter watches only the node just
// below its own.
type queue struct {
	s      *Session
	parent string
	recipe Recipe
	o      recipeOptions

	// rotation: the predecessors of our last two waits, to guess the
	// next one (see guess).
	mu    sync.Mutex
	preds [2]predecessor
	// trusted: the last guess that missed was one two waits agreed on
	// (a swap in a rotation); one predecessor seen is then enough to
	// guess from.
	trusted bool
}

// predecessor is a herald node that sat just below ours.
type predecessor struct {
	session int64
	nonce   uint32
	ok      bool
}

func newQueue(s *Session, parent string, recipe Recipe, prefix string, opts []Option) (*queue, error) {
	if s == nil {
		return nil, errors.New("elect: nil session")
	}
	if err := ValidatePath(parent); err != nil {
		return nil, err
	}
	o := defaultRecipeOptions(prefix)
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	return &queue{s: s, parent: parent, recipe: recipe, o: o}, nil
}

// ticket is our place in the queue. czxid is known only when the node was
// found again after a lost create reply; otherwise the handle learns it
// from its first watch on the node (see Handle.Term).
type ticket struct {
	name  string
	seq   int32
	czxid int64
}

func (q *queue) full(name string) string { return q.parent + "/" + name }

// enqueue creates our node. On connection loss during the create the
// outcome is unknown: we look for our node by its session+nonce marker and
// accept it only if its ephemeralOwner is our session; otherwise we create
// again. A cancelled ctx never leaves a node behind.
func (q *queue) enqueue(ctx context.Context, data []byte) (ticket, error) {
	base := heraldName(q.o.prefix, q.s.ID(), q.s.nextNonce())
	marker := base[len(q.o.prefix):]
	conn := q.s.Conn()
	for attempt := 0; ; attempt++ {
		if err := q.s.gone(); err != nil {
			return ticket{}, err
		}
		created, err := call(ctx, func() (string, error) {
			return conn.Create(q.full(base), data, zk.FlagEphemeral|zk.FlagSequence, q.o.acl)
		})
		switch {
		case err == nil:
			seq, _ := ParseSequence(path.Base(created))
			return ticket{name: path.Base(created), seq: seq}, nil
		case errors.Is(err, zk.ErrNoNode):
			if !q.o.createParents {
				return ticket{}, fmt.Errorf("%w: %s; create it first (herald never guesses ACLs for you) or use CreateParents", ErrNoParent, q.parent)
			}
			if err := q.createParents(ctx); err != nil {
				return ticket{}, err
			}
		case errors.Is(err, zk.ErrNoAuth):
			return ticket{}, fmt.Errorf("elect: not allowed to create nodes under %s: %w; check the ACL and your credentials", q.parent, err)
		case ctx.Err() != nil || connLoss(err):
			if ctx.Err() != nil {
				// The create may still land after we gave up: remove it.
				q.s.background(func() { q.sweep(marker) })
				return ticket{}, ctx.Err()
			}
			if err := q.s.awaitConnected(ctx); err != nil {
				return ticket{}, err
			}
			t, found, err := q.find(ctx, marker)
			if err != nil {
				return ticket{}, err
			}
			if found {
				return t, nil
			}
		case expired(err):
			return ticket{}, ErrSessionLost
		default:
			return ticket{}, fmt.Errorf("elect: create node under %s: %w", q.parent, err)
		}
	}
}

// stamp checks that a node found by its marker is ours and reads its
// czxid (the term it will carry as owner).
func (q *queue) stamp(ctx context.Context, name string) (ticket, error) {
	seq, _ := ParseSequence(name)
	for {
		st, err := call(ctx, func() (*zk.Stat, error) {
			ok, st, err := q.s.Conn().Exists(q.full(name))
			if err == nil && !ok {
				return nil, ErrNodeDeleted
			}
			return st, err
		})
		switch {
		case err == nil:
			if st.EphemeralOwner != q.s.ID() {
				return ticket{}, fmt.Errorf("elect: node %s belongs to session 0x%x, not ours (0x%x)", q.full(name), st.EphemeralOwner, q.s.ID())
			}
			return ticket{name: name, seq: seq, czxid: st.Czxid}, nil
		case connLoss(err) && ctx.Err() == nil:
			if err := q.s.awaitConnected(ctx); err != nil {
				return ticket{}, err
			}
		case expired(err):
			return ticket{}, ErrSessionLost
		default:
			return ticket{}, err
		}
	}
}

// find looks for our node after a create whose reply was lost.
func (q *queue) find(ctx context.Context, marker string) (ticket, bool, error) {
	children, err := call(ctx, func() ([]string, error) {
		c, _, err := q.s.Conn().Children(q.parent)
		return c, err
	})
	if err != nil {
		if expired(err) {
			return ticket{}, false, ErrSessionLost
		}
		if connLoss(err) {
			return ticket{}, false, nil // try the create again after reconnecting
		}
		return ticket{}, false, err
	}
	for _, c := range children {
		if !strings.Contains(c, marker) {
			continue
		}
		t, err := q.stamp(ctx, c)
		if err != nil {
			return ticket{}, false, nil
		}
		return t, true, nil
	}
	return ticket{}, false, nil
}

// sweep removes any node carrying our marker; used when a create was
// abandoned and might still have landed.
func (q *queue) sweep(marker string) {
	ctx, cancel := context.WithTimeout(context.Background(), q.o.releaseWait)
	defer cancel()
	for ctx.Err() == nil && q.s.gone() == nil {
		if err := q.s.awaitConnected(ctx); err != nil {
			return
		}
		children, err := call(ctx, func() ([]string, error) {
			c, _, err := q.s.Conn().Children(q.parent)
			return c, err
		})
		if err != nil {
			continue
		}
		clean := true
		for _, c := range children {
			if strings.Contains(c, marker) {
				if err := q.remove(ctx, c); err != nil {
					clean = false
				}
			}
		}
		if clean {
			return
		}
	}
}

// abandon removes a node we created but will not use, in the background
// with a fresh context (the caller's may be cancelled already).
func (q *queue) abandon(name string) {
	q.s.background(func() {
		ctx, cancel := context.WithTimeout(context.Background(), q.o.releaseWait)
		defer cancel()
		for ctx.Err() == nil && q.s.gone() == nil {
			if err := q.remove(ctx, name); err == nil {
				return
			}
			if err := q.s.awaitConnected(ctx); err != nil {
				return
			}
		}
	})
}

func (q *queue) remove(ctx context.Context, name string) error {
	_, err := call(ctx, func() (struct{}, error) { return struct{}{}, q.s.Conn().Delete(q.full(name), -1) })
	if err == nil || errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

func (q *queue) createParents(ctx context.Context) error {
	// Parents get the recipe's ACL with create and read added: queue nodes
	// need no create permission, but the group must let participants in.
	acl := make([]zk.ACL, len(q.o.acl))
	for i, a := range q.o.acl {
		a.Perms |= zk.PermCreate | zk.PermRead
		acl[i] = a
	}
	p := ""
	for _, seg := range strings.Split(q.parent[1:], "/") {
		p += "/" + seg
		_, err := call(ctx, func() (string, error) { return q.s.Conn().Create(p, nil, 0, acl) })
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("elect: create parent %s: %w", p, err)
		}
	}
	return nil
}

// list returns the parsed queue, lowest first.
func (q *queue) list(ctx context.Context) ([]entry, error) {
	children, err := call(ctx, func() ([]string, error) {
		c, _, err := q.s.Conn().Children(q.parent)
		return c, err
	})
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return nil, fmt.Errorf("%w: %s", ErrNoParent, q.parent)
		}
		return nil, err
	}
	return parseChildren(children), nil
}

// wait blocks until t owns the queue. It watches only the next lower node.
// When that node was the only lower one at the last listing, its deletion
// makes us owner without listing again (sequence numbers only grow, so no
// new lower node can appear). A predecessor that vanished between listing
// and watch just means listing again: each pass removes it from view, so
// there is no livelock. A guessed predecessor (see guess) comes with its
// watch already set and takes the place of the first listing.
func (q *queue) wait(ctx context.Context, t ticket, tryOnly bool) error {
	var (
		pred      entry
		onlyLower bool
		ch        <-chan zk.Event
	)
	if !tryOnly {
		pred, ch = q.tryGuess(ctx, t)
	}
	for {
		if ch == nil {
			es, err := q.list(ctx)
			if err != nil {
				if err2 := q.retryable(ctx, err); err2 != nil {
					return err2
				}
				continue
			}
			idx := -1
			for i, e := range es {
				if e.name == t.name {
					idx = i
					break
				}
			}
			if idx < 0 {
				if err := q.s.gone(); err != nil {
					return err
				}
				return fmt.Errorf("%w: %s", ErrNodeDeleted, q.full(t.name))
			}
			if idx == 0 {
				q.remember(t, entry{})
				return nil
			}
			if tryOnly {
				return ErrLocked
			}
			pred, onlyLower = es[idx-1], idx == 1
		}
	watch:
		for {
			if ch == nil {
				ok, c, err := q.watchNode(ctx, pred.name)
				if err != nil {
					if err2 := q.retryable(ctx, err); err2 != nil {
						return err2
					}
					break watch
				}
				if !ok {
					if onlyLower {
						q.remember(t, pred)
						return nil
					}
					break watch
				}
				ch = c
			}
			select {
			case ev := <-ch:
				ch = nil
				switch {
				case ev.Type == zk.EventNodeDeleted && onlyLower:
					q.remember(t, pred)
					return nil
				case ev.Type == zk.EventNodeDeleted:
					break watch
				case ev.Err != nil && expired(ev.Err):
					return ErrSessionLost
				case ev.Type == zk.EventNotWatching:
					if err := q.s.gone(); err != nil {
						return err
					}
					break watch
				case ev.Type == zk.EventNodeDataChanged:
					// herald writes a queue node's data only in the
					// transaction in which its owner deletes it: our
					// predecessor owned and is gone, and no node can sit
					// between it and us. We own, without listing.
					q.remember(t, pred)
					return nil
				}
				// Created (cannot happen for a node that existed): watch again.
			case <-ctx.Done():
				return ctx.Err()
			case <-q.s.Done():
				return q.s.Err()
			}
		}
		ch = nil
	}
}

// A fixed set of clients taking one lock in turn forms a rotation: each
// re-enqueues right after it releases, so a waiter's predecessor is the
// same session every time, one create later. When our last two waits saw
// that, guess names the node that should sit just below t: that session,
// its next nonce, t's sequence minus one. A data watch on the guess sets
// the predecessor's watch without listing the children: a lock cycle
// costs three requests instead of four. A wrong guess costs one request
// (getData leaves no watch on a missing node).
//
// Two clients racing to re-enqueue sometimes swap places in the rotation.
// The listing after such a miss shows the new predecessor, and the next
// wait guesses from it alone, while the rotation is trusted. A second
// miss in a row ends the trust until two waits agree again, so a lock
// taken in no fixed order wastes at most one request now and then.
func (q *queue) guess(t ticket) (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	a := q.preds[0]
	if !a.ok || !q.agreed() && !q.trusted {
		return "", false
	}
	return heraldName(q.o.prefix, a.session, a.nonce+1) + FormatSequence(t.seq-1), true
}

// agreed reports whether our last two waits were behind one session's
// consecutive nodes. q.mu must be held.
func (q *queue) agreed() bool {
	a, b := q.preds[0], q.preds[1]
	return a.ok && b.ok && a.session == b.session && a.nonce == b.nonce+1
}

// tryGuess sets a data watch on the guessed predecessor. It returns a nil
// channel when there is no guess or it missed; wait then lists.
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
	q.trusted = q.agreed()
	q.preds = [2]predecessor{}
	return entry{}, nil
}

// watchNode sets a one-shot watch on a node if it exists, and none if it
// does not. getData does exactly that; exists would leave a watch behind
// on a missing name, and a sequential name never comes back to fire it.
func (q *queue) watchNode(ctx context.Context, name string) (bool, <-chan zk.Event, error) {
	ok, _, ch, err := getW(ctx, q.s.Conn(), q.full(name))
	if errors.Is(err, zk.ErrNoAuth) {
		// exists would set the watch, but ZooKeeper sends its event only
		// to a session that may read the node: we would wait forever.
		return false, nil, fmt.Errorf("elect: may not read %s, the node ours waits behind: %w; grant READ to every participant in the nodes' ACL", q.full(name), err)
	}
	return ok, ch, err
}

// remember records the predecessor t waited behind (none when t owned at
// once). Only a herald node of this recipe just below t counts.
func (q *queue) remember(t ticket, pred entry) {
	var p predecessor
	if pred.name != "" && pred.seq == t.seq-1 {
		rest, ok := strings.CutSuffix(pred.name, FormatSequence(pred.seq))
		if ok && strings.HasPrefix(rest, q.o.prefix) && len(rest) == len(q.o.prefix)+heraldMarkerLen {
			p.session, p.nonce, p.ok = heraldMarkerParts(rest)
		}
	}
	q.mu.Lock()
	q.preds = [2]predecessor{p, q.preds[0]}
	q.mu.Unlock()
}

// retryable waits out a connection loss; other errors are returned.
func (q *queue) retryable(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case expired(err):
		return ErrSessionLost
	case connLoss(err):
		wctx, cancel := context.WithTimeout(ctx, q.s.Timeout()+time.Second)
		defer cancel()
		if err := q.s.awaitConnected(wctx); err != nil && ctx.Err() == nil && q.s.gone() == nil {
			return nil // still suspended; the caller loops and asks again
		} else if err != nil {
			return err
		}
		return nil
	}
	return err
}
