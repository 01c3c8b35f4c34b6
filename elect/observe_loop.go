package elect

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// Observe streams the changes of one group, computed from one children
// watch (NodeChildrenChanged), a data watch on the owner's node (herald's
// release mark says the owner let go by its own call) and one on herald's
// office node (acknowledgments, and reasons the mark cannot carry).
// The first change is a Snapshot; after a lost connection the observer says
// Unknown and, once reconnected, sends a fresh Snapshot. It works on groups
// written by herald and by other clients (Curator, Kazoo, go-zookeeper, the
// seeds' names): anything whose children end in a ZooKeeper sequence.
func Observe(ctx context.Context, s *Session, group string, opts ...ObserveOption) (*Observer, error) {
	if s == nil {
		return nil, errors.New("elect: nil session")
	}
	if err := ValidatePath(group); err != nil {
		return nil, err
	}
	oo := observeOptions{buffer: 64}
	for _, opt := range opts {
		if err := opt(&oo); err != nil {
			return nil, err
		}
	}
	o := &Observer{ch: make(chan Change, oo.buffer), done: make(chan struct{})}
	go o.run(ctx, s, group, oo)
	return o, nil
}

func (o *Observer) finish(err error) {
	o.mu.Lock()
	o.err = err
	o.mu.Unlock()
}

func (o *Observer) run(ctx context.Context, s *Session, group string, oo observeOptions) {
	defer close(o.done)
	defer close(o.ch)
	r := reader{conn: s.Conn(), group: group, recipe: oo.recipe}
	var prev *View
	// The armed watches, and which fired since the last read.
	var childW, existsW, officeW, ownerW <-chan zk.Event
	childrenFired, officeFired := true, false
	// released is the owner node whose data watch said its owner let it go
	// by its own call, until the next read accounts for it.
	released := ""
	// ownerFired: the owner's node changed or went. Read the group again,
	// and the owner's details with a fresh watch; a herald owner's node
	// changes only in the transaction that releases it.
	ownerFired := func(ev zk.Event) {
		ownerW, r.owner, r.ownerW = nil, nil, nil
		childrenFired = true
		if ev.Type == zk.EventNodeDataChanged && prev != nil && prev.Owner != nil && isHeraldName(prev.Owner.Node) {
			released = prev.Owner.Node
		}
	}
	emit := func(cs []Change) bool {
		for _, c := range cs {
			select {
			case o.ch <- c:
			case <-ctx.Done():
				return false
			}
		}
		return true
	}
	for {
		st, changed := s.State()
		switch st {
		case StateLost, StateClosed:
			o.finish(s.Err())
			return
		case StateConnecting, StateSuspended:
			if prev != nil {
				if !emit([]Change{{Kind: Unknown, Group: group, Recipe: prev.Recipe, Zxid: prev.Pzxid}}) {
					o.finish(ctx.Err())
					return
				}
				prev, officeW, ownerW, released = nil, nil, nil, ""
				r.owner, r.ownerW = nil, nil
				childrenFired = true
			}
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				o.finish(ctx.Err())
				return
			}
		}
		cctx, cancel := stateCtx(changed, ctx.Done())
		var v View
		var err error
		if !childrenFired && officeFired && prev != nil && prev.Exists {
			// Only the office changed (an acknowledgment): read it alone.
			v = *prev
			var ch <-chan zk.Event
			v.Office, v.OfficeZxid, ch, err = r.readOffice(cctx, true)
			if errors.Is(err, zk.ErrNoNode) {
				v.Office, err = nil, nil
				childrenFired = true // gone: the children watch tells the rest
			}
			officeW = ch
		} else {
			// After a herald release (the owner's data watch said so, or
			// the office recorded one) the next in line most likely owns
			// now: read it beside the listing.
			guess := ""
			if (released != "" || officeFired) && prev != nil && len(prev.Queue) > 1 {
				guess = prev.Queue[1].Node
			}
			var w watches
			v, w, err = r.readGuess(cctx, true, officeW == nil, guess, officeFired && prev != nil && prev.Office != nil)
			childW, existsW, ownerW = w.children, w.exists, w.owner
			if w.office != nil {
				officeW = w.office
			}
		}
		cancel()
		if err != nil {
			switch {
			case ctx.Err() != nil:
				o.finish(ctx.Err())
				return
			case expired(err):
				o.finish(ErrSessionLost)
				return
			case connLoss(err) || errors.Is(err, context.Canceled):
				childrenFired = true
				continue // the state loop above handles it
			default:
				o.finish(fmt.Errorf("elect: observe %s: %w", group, err))
				return
			}
		}
		childrenFired, officeFired = false, false
		changes := diff(prev, v, released)
		released = ""
		if !emit(changes) {
			o.finish(ctx.Err())
			return
		}
		prev = &v
		select {
		case <-childW:
			childrenFired = true
		case <-existsW:
			childrenFired = true
		case <-officeW:
			officeW, officeFired = nil, true
		case ev := <-ownerW:
			ownerFired(ev)
			if ev.Type == zk.EventNodeDataChanged || ev.Type == zk.EventNodeDeleted {
				// The deletion fires the children watch right behind this
				// one, in the same reply stream: wait for it so that one
				// read answers both.
				awaitFired(childW)
				childW, existsW = nil, nil
			}
		case <-changed:
			childrenFired = true
		case <-ctx.Done():
			o.finish(ctx.Err())
			return
		}
		// One transaction often fires several watches (a release writes
		// and deletes the owner's node, and may write the office): take
		// them all in one read.
		select {
		case <-childW:
			childrenFired = true
		default:
		}
		select {
		case ev := <-ownerW:
			ownerFired(ev)
		default:
		}
		select {
		case <-officeW:
			officeW, officeFired = nil, true
		default:
		}
		if childrenFired {
			childW, existsW = nil, nil
		}
	}
}

// awaitFired waits briefly for a watch that is known to be on its way.
// A nil channel, or one that does not fire in time, just means the next
// read happens without it.
func awaitFired(ch <-chan zk.Event) {
	if ch == nil {
		return
	}
	t := time.NewTimer(50 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

// isHeraldName reports whether node was created by herald, whose owners
// write their node only in the transaction that releases it.
func isHeraldName(node string) bool {
	info, ok := ParseName(node)
	return ok && info.Convention == "herald"
}

// diff turns two views into changes, in the order they happened as far as
// one listing can tell: leavers, the owner change, newcomers, readiness.
// released names a node whose owner let it go by its own call (its data
// watch fired as herald's release mark), "" when none did.
func diff(prev *View, v View, released string) []Change {
	base := Change{Group: v.Group, Recipe: v.Recipe, Owner: v.Owner, Zxid: v.Pzxid, Ready: v.Ready()}
	if prev == nil {
		c := base
		c.Kind, c.Queue = Snapshot, v.Queue
		return []Change{c}
	}
	owner := func(w *View) string {
		if w.Owner == nil {
			return ""
		}
		return w.Owner.Node
	}
	ownerChanged := owner(prev) != owner(&v)
	was := map[string]Participant{}
	for _, p := range prev.Queue {
		was[p.Node] = p
	}
	is := map[string]bool{}
	for _, p := range v.Queue {
		is[p.Node] = true
	}
	// Every child create or delete bumps cversion by one; what we cannot
	// account for by the difference of two listings came and went unseen.
	seen := setDiff(prev.children, v.children) + setDiff(v.children, prev.children)
	unexplained := int64(v.Cversion-prev.Cversion) - int64(seen)
	var out []Change
	for _, p := range prev.Queue {
		if is[p.Node] || (ownerChanged && p.Node == owner(prev)) {
			continue
		}
		c := base
		c.Kind, c.Candidate, c.Reason, c.Owner = Left, &p, reasonFor(v.Office, p.Node), v.Owner
		out = append(out, c)
	}
	if ownerChanged {
		c := base
		c.Kind, c.Previous, c.Queue = OwnerChanged, prev.Owner, v.Queue
		// An intermediate owner may hide in nodes that came and went
		// unseen, or in a node that left while it was ahead of the new
		// owner (it may have owned in between).
		c.Gap = unexplained > 0 || !prev.Exists && v.Exists && v.Cversion > int32(len(v.children))
		for _, p := range prev.Queue {
			if !is[p.Node] && p.Node != owner(prev) && (v.Owner == nil || SeqLess(p.Sequence, v.Owner.Sequence)) {
				c.Gap = true
			}
		}
		if prev.Owner != nil {
			c.Reason = reasonFor(v.Office, prev.Owner.Node)
			if c.Reason == ReasonUnknown && released == prev.Owner.Node {
				c.Reason = voluntary(v.Recipe)
			}
		}
		out = append(out, c)
	}
	for _, p := range v.Queue {
		if _, ok := was[p.Node]; ok || (ownerChanged && p.Node == owner(&v)) {
			continue
		}
		c := base
		c.Kind, c.Candidate = Joined, &p
		out = append(out, c)
	}
	if v.Ready() && (!prev.Ready() || ownerChanged) {
		c := base
		c.Kind = Ready
		if v.OfficeZxid > c.Zxid {
			c.Zxid = v.OfficeZxid
		}
		out = append(out, c)
	}
	return out
}

// voluntary is the reason an owner of recipe gives up by its own call.
func voluntary(r Recipe) Reason {
	if r == RecipeLock {
		return ReasonReleased
	}
	return ReasonResigned
}

func reasonFor(o *Office, node string) Reason {
	if o != nil && o.Released != nil && o.Released.Node == node {
		return o.Released.Reason
	}
	return ReasonUnknown
}

// setDiff counts the names in a that are not in b.
func setDiff(a, b []string) int {
	in := make(map[string]struct{}, len(b))
	for _, x := range b {
		in[x] = struct{}{}
	}
	n := 0
	for _, x := range a {
		if _, ok := in[x]; !ok {
			n++
		}
	}
	return n
}
