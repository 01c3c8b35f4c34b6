package elect

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect/ident"
)

// resyncLoop gives every group a Resync turn once per interval, spread
// evenly over it, until Many stops.
func (m *Many) resyncLoop() {
	for {
		gs := m.members()
		if !m.resyncRound(resyncPeriod(m.opts, len(gs)), gs) {
			return
		}
	}
}

// resyncPeriod is how long a round of Resync turns over n groups lasts:
// the Resync interval, shortened by ResyncSooner.
func resyncPeriod(o manyOptions, n int) time.Duration {
	if o.resyncRate <= 0 {
		return o.resync
	}
	d := time.Duration(n) * time.Second / time.Duration(o.resyncRate)
	return min(max(d, o.resyncFloor), o.resync)
}

// members lists the groups observed now.
func (m *Many) members() []*member {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*member, 0, len(m.groups))
	for _, g := range m.groups {
		out = append(out, g)
	}
	return out
}

// resyncRound queues the turns of gs a few at a time over d; false once
// Many stops. A round over no groups lasts a second at the most: groups
// are added after ObserveMany starts, so the first round nearly always
// finds none, and one as long as d put the first check of a group added
// meanwhile two rounds away (a bridge watching one group checked it
// after 60 s, not its 30 s floor).
func (m *Many) resyncRound(d time.Duration, gs []*member) bool {
	if len(gs) == 0 {
		return m.pause(min(d, time.Second))
	}
	tick := max(d/time.Duration(len(gs)), 10*time.Millisecond)
	per := int((int64(len(gs))*int64(tick) + int64(d) - 1) / int64(d))
	for i := 0; i < len(gs); i += per {
		if !m.pause(tick) {
			return false
		}
		m.mu.Lock()
		for _, g := range gs[i:min(i+per, len(gs))] {
			g.fired.resync = true
			m.enqueue(g)
		}
		m.mu.Unlock()
	}
	return true
}

// pause waits d; false once Many stops.
func (m *Many) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-m.ctx.Done():
		return false
	}
}

// recheck is a group's Resync turn: one read that sets no watch, compared
// with the last view. It reports whether the group must be read in full;
// a failed read is handled as any other (the group says Unknown until a
// retry reads it).
func (m *Many) recheck(g *member, changed <-chan struct{}) bool {
	cctx, cancel := stateCtx(changed, m.ctx.Done())
	defer cancel()
	var again bool
	var err error
	if g.single != nil {
		again, err = recheckSingle(cctx, g.single)
	} else {
		again, err = m.recheckGroup(cctx, &g.ob)
	}
	if err != nil {
		m.readFailed(g, err)
		return false
	}
	return again
}

// recheckGroup lists the group without a watch: a listing that differs
// from the last view's (or a group come or gone) is a change no watch
// reported.
func (m *Many) recheckGroup(ctx context.Context, ob *observation) (bool, error) {
	if ob.prev == nil {
		return false, nil // not seen yet: a full read is on its way
	}
	st, err := call(ctx, func() (*zk.Stat, error) {
		_, st, err := m.s.Conn().Children(ob.r.group)
		return st, err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return ob.prev.Exists, nil
	case err != nil:
		return false, unlistable(ob.r.group, err)
	}
	return !ob.prev.Exists || st.Cversion != ob.prev.Cversion || st.Pzxid != ob.prev.Pzxid, nil
}

// recheckSingle reads a single-node leader's node without a watch: another
// node, or the node written, come or gone, is a change no watch reported.
// So is a change of its epoch node that no watch reports (epochChanged).
func recheckSingle(ctx context.Context, st *singleState) (bool, error) {
	prev := st.prev
	if prev == nil {
		return false, nil
	}
	_, node, _, err := st.r.node(ctx, false)
	var again bool
	switch {
	case err != nil:
		return false, err
	case node == nil || prev.Owner == nil:
		again = (node == nil) != (prev.Owner == nil)
	default:
		again = node.Czxid != prev.nodeCzxid || node.Mzxid != prev.dataZxid
	}
	if again {
		return true, nil
	}
	return epochChanged(ctx, st)
}

// epochChanged reports whether the epoch node of a leader last read with
// an owner was hidden by its ACL, deleted, or shown again since, or came
// to hold no number, or was written again since it held none: ZooKeeper
// fires no watch for an ACL, and none is set on the epoch node, so the
// owner's epoch was said to be unknown (or said nothing of a deleted
// node, or of data that is no epoch) until the next election. A number
// written under the same owner (an operator's set) is left to the next
// election, which counts it (see missedByEpoch).
func epochChanged(ctx context.Context, st *singleState) (bool, error) {
	prev := st.prev
	if st.r.sn.EpochPath == "" || prev == nil || prev.Owner == nil {
		return false, nil
	}
	data, est, err := st.r.epoch(ctx)
	hidden := errors.Is(err, errEpochHidden)
	switch {
	case err != nil && !hidden:
		return false, err
	case hidden || prev.epochHidden:
		return hidden != prev.epochHidden, nil
	case (est == nil) != prev.epochMissing:
		return true, nil
	case est == nil:
		return false, nil
	case prev.epochNoNumber:
		return est.Mzxid != prev.epochMzxid, nil // fixed, or other text
	}
	// Written during the tenure (the read judged what was there before).
	_, perr := ident.ParseEpoch(data)
	return perr != nil && est.Mzxid > prev.dataZxid, nil
}

// restateKind is what a group's next read must send besides its changes:
// nothing more, a Snapshot (Refresh), or a Snapshot marked Gap (Restate).
// A later request of a greater kind wins.
type restateKind uint8

const (
	restateNone restateKind = iota
	restateFresh
	restateGap
)

// takeRestate takes g's Restate or Refresh request, if any.
func (m *Many) takeRestate(g *member) restateKind {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := g.restate
	g.restate = restateNone
	return r
}

// keepRestate puts back a request whose read failed.
func (m *Many) keepRestate(g *member, r restateKind) {
	if r == restateNone {
		return
	}
	m.mu.Lock()
	g.restate = max(g.restate, r)
	m.mu.Unlock()
}

// restated is changes followed by snap, the group's state afresh, marked
// Gap when gap is set; when changes end with a Snapshot already, that one
// stands for it (and is marked).
func restated(changes []Change, snap Change, gap bool) []Change {
	if n := len(changes); n > 0 && changes[n-1].Kind == Snapshot {
		changes[n-1].Gap = changes[n-1].Gap || gap
		return changes
	}
	snap.Gap = snap.Gap || gap
	return append(changes, snap)
}

// Sent is how many changes Many has put on Changes so far.
func (m *Many) Sent() uint64 { return m.sent.Load() }

// Settle waits until every group that a watch event (or anything else)
// queued before the call has been read by a turn that began after it,
// and that turn's changes are on Changes (Sent counts them): a barrier for
// a caller that must know its observers have caught up with what the
// session has heard, such as a bridge about to confirm its values after
// it was frozen. It reports false when ctx or Many ends first. A group
// whose read fails has had its turn (and is known unread).
func (m *Many) Settle(ctx context.Context) bool {
	type pending struct {
		g    *member
		need uint64
	}
	var wait []pending
	m.mu.Lock()
	for _, g := range m.groups {
		switch {
		case g.busy && g.again: // the event came during this turn: the next one reads it
			wait = append(wait, pending{g, g.turns + 2})
		case g.busy || g.queued:
			wait = append(wait, pending{g, g.turns + 1})
		}
	}
	m.mu.Unlock()
	for _, p := range wait {
		for {
			m.mu.Lock()
			done := p.g.turns >= p.need || p.g.removed
			ended := m.ended
			m.mu.Unlock()
			switch {
			case done:
			case ended:
				return false
			default:
				select {
				case <-ctx.Done():
					return false
				case <-time.After(2 * time.Millisecond): // polling interval, not ordering
				}
				continue
			}
			break
		}
	}
	// Nothing was pending, or all of it was read: the barrier holds
	// unless Many ended, after which nothing more reaches Changes.
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.ended
}
