package elect

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Predecessor is the last node that can have owned the group before this
// handle's, as the wait that made it owner last saw the queue: the node
// just below ours ("" when it saw none: the queue was empty, or its node
// was lowest at its first look). It owned before ours unless it left
// while it waited.
func (h *Handle) Predecessor() string { return h.t.prev }

// PredecessorLowestSince is when the wait that made this handle owner
// first saw its Predecessor as the group's lowest node, every owner
// before it gone: zero when it never did (it saw other nodes below ours,
// then ours lowest). A predecessor's session end (PredecessorSessionEnded)
// proves that its own work stopped, not that of an owner before it whose
// node went without a release: a runner that cannot hear stops its work
// within some bound of its node's going, which came before this moment.
// So from here the owner before the predecessor is vouched for by time
// alone: herald run and herald lock wait that bound from this moment
// before they trust a session end, or a release that does not vouch for
// those owners (PredecessorVouched).
//
// Where the last PredecessorReleased found the predecessor's release on
// record with how long it held (Release.Held), every owner before it was
// gone that long before the look, at the latest: the earlier of the two
// moments is returned, or that one alone when the wait never saw the
// predecessor lowest (it came after the release). Only durations are
// compared, each on its own clock.
func (h *Handle) PredecessorLowestSince() time.Time {
	seen := h.t.prevLowest
	if n := h.prevGoneBy.Load(); n != 0 {
		if by := time.Unix(0, n); seen.IsZero() || by.Before(seen) {
			return by
		}
	}
	return seen
}

// PredecessorReleased reports whether the node that owned before ours
// went by a release herald recorded (the mark on the group node, the
// office's record, or, where neither may be written, the note on its
// owner's session node, naming that node): its owner gave the group up on
// purpose, after its work stopped, or said afterwards that its work had
// stopped (RecordStopped). It is false for a herald node that went
// without one: someone deleted it, or its session ended, and its owner
// may not have heard yet (frozen, or cut off from the servers). `herald
// run` and `herald lock` then wait for such a record, or for the longest
// a runner that cannot hear takes to stop its command, before they start
// theirs. It is true when the predecessor was not a herald node (a
// foreign client's release records nothing, and no bound is known for its
// work). Under ProveSessionEnd it is also true once the predecessor's
// session has ended (see seeSessionNode): a runner's work stops before its
// session can expire. That vouches for the predecessor's work only: see
// PredecessorLowestSince for the owners before it.
//
// With no owner seen before ours, "nobody before us" must be shown, not
// assumed: an owner deleted by hand just before our node was made, or
// after it but before our first look, leaves no trace in our listing. It
// is true then only when our node is the group's first child, or the
// nodes made before ours are, from the last whose release herald recorded
// on, that release's and those of waiters that gave up without owning and
// said so as they left (see groupMark.accountedBefore; releasedJustBefore
// where the release is in the office).
func (h *Handle) PredecessorReleased(ctx context.Context) (bool, error) {
	ok, _, err := h.predecessorReleased(ctx, false)
	return ok, err
}

// PredecessorReleasedW is PredecessorReleased that, when it reports
// false, also returns a watch that fires when the answer may have changed:
// on the group node's data, where RecordStopped writes, and under
// ProveSessionEnd on the predecessor's session node, which goes with its
// session. Look again then. The watch is nil when none was set (the
// answer is true, or the read failed).
func (h *Handle) PredecessorReleasedW(ctx context.Context) (bool, <-chan zk.Event, error) {
	return h.predecessorReleased(ctx, true)
}

// ReleasesRecorded reports whether herald can record a release in the
// group, as PredecessorReleased reads it: false when the group node holds
// someone else's data, or this identity may not write it, the group may
// hold no office (a lock's) to take the record instead, and our session
// keeps no session node that could (ProveSessionEnd, with a session root
// it may write). Every herald owner before ours then goes without a
// release on record.
func (h *Handle) ReleasesRecorded() bool {
	switch h.q.markState() {
	case markForeign, markDenied:
		return sideNodesRefused(h.q.parent, h.t.name) == nil || h.q.ownSessionNode(h.t.name) != ""
	}
	return true
}

// predecessorNoted reports whether the predecessor's session node notes
// its release (see sessionNote): where neither the mark nor an office may
// take a release, its owner's session node took it, in the transaction
// that deleted its node. A note of a waiter that gave up (cancelled) does
// not count: like a withdrawal on the mark, it vouches for no owner
// before it. With watch, a session node without such a note is watched:
// a later note (RecordStopped's) fires it.
func (h *Handle) predecessorNoted(ctx context.Context, watch bool) (noted, vouches bool, _ <-chan zk.Event) {
	node := h.q.sessionNodeOf(h.t.prev)
	if node == "" {
		return false, false, nil
	}
	r, err := readNode(ctx, h.q.s.Conn(), node, watch)
	if err != nil {
		return false, false, nil
	}
	if d := timeoutIn(r.data); d > 0 {
		// The owner's timeout, should the wait have failed to read it
		// (see LongestTimeoutSeen).
		h.q.s.noteTimeout(node, d)
	}
	n, ok := decodeSessionNote(r.data, h.q.parent, h.t.prev)
	if id, _, herald := heraldNode(h.t.prev); !herald || r.st == nil || r.st.EphemeralOwner != id.session {
		// Another session's node under the name: anyone may create under
		// the session root, and write a note that vouches there.
		ok = false
	}
	if ok && n.Reason != ReasonCancelled && n.Reason != ReasonUnknown {
		return true, n.Vouches, nil
	}
	return false, false, r.ch
}

// PredecessorSessionEnded reports whether the last PredecessorReleased (or
// PredecessorReleasedW) that answered true did so because the
// predecessor's session had ended (ProveSessionEnd), not on a record.
func (h *Handle) PredecessorSessionEnded() bool { return h.prevEnded.Load() }

// SessionEndUnproven says why a look of PredecessorReleased could not
// count the predecessor's node as gone with its session ("" when none
// failed so; once a look doubts the session node, what raised the doubt):
// a runner waiting its bound says it, so that an operator knows whether a
// copy's coming or going, a hand's deletion or the layout kept the quick
// handover from it.
func (h *Handle) SessionEndUnproven() string {
	why, _ := h.unproven.Load().(string)
	return why
}

// PredecessorVouched reports whether the last PredecessorReleased (or
// PredecessorReleasedW) that answered true also showed the work of every
// owner before the predecessor stopped: the record it found vouches for
// them (Release.Vouches: its owner, a herald run or herald lock, started
// only once they had stopped), or nobody can have owned before it (our
// node, or the predecessor, is the group's first, or every node made
// before it is accounted for by such a record and withdrawals). A foreign
// client's or a library owner's release, and a session's end, vouch for
// their own owner's work only: an owner before it whose node went by
// someone's hand may still be stopping its command, and `herald run` and
// `herald lock` wait, from when the predecessor was first seen lowest
// (PredecessorLowestSince), as long as a runner that cannot hear takes to
// stop.
func (h *Handle) PredecessorVouched() bool { return h.prevVouched.Load() }

// Vouch declares that this owner started its work only once the work of
// every owner before it had stopped: `herald run` and `herald lock` call
// it once they have waited for that (their predecessor gate opened). The
// release records written for this handle afterwards (a release, a
// resignation, RecordStopped) say so (Release.Vouches), and the next
// runner trusts them for every owner before this one and starts at once.
// A library owner that does not wait so leaves it unset: its release
// vouches for its own work only.
func (h *Handle) Vouch() { h.vouched.Store(true) }

func (h *Handle) predecessorReleased(ctx context.Context, watch bool) (bool, <-chan zk.Event, error) {
	look := time.Now()
	released, vouched, ended, held, ch, err := h.lookAtPredecessor(ctx, watch)
	if released && !vouched && h.PredecessorFirst() {
		// Nobody owned before the predecessor in this group, but the
		// group may have been deleted, and made again, under an owner
		// whose command still runs (see the run notes).
		if runs, rch, rerr := h.runsBeside(ctx, watch); runs || rerr != nil {
			released, ch, err = false, rch, rerr
		}
	}
	if !released || !vouched {
		// A runner may now wait for an owner that could not hear: its
		// bound grows with that owner's timeout, whoever it was.
		h.learnLiveTimeouts(ctx)
	}
	if released {
		h.prevEnded.Store(ended)
		h.prevVouched.Store(vouched)
		var by int64
		if held > 0 {
			by = look.Add(-held).UnixNano()
		}
		h.prevGoneBy.Store(by)
	}
	return released, ch, err
}

// PredecessorFirst reports whether our predecessor is its group's first
// node, before which nobody owned there (but for an owner whose node went
// with a group deleted whole, which a run note tells: PredecessorReleased
// does not answer true while one may still run).
func (h *Handle) PredecessorFirst() bool {
	seq, ok := ParseSequence(h.t.prev)
	return ok && seq == 0
}

// lookAtPredecessor is predecessorReleased's look: whether the predecessor
// went by a release on record (or is a foreign client's, or nobody came
// before), whether that vouches for the owners before it too (see
// PredecessorVouched), and whether it was its session's end that showed
// it.
func (h *Handle) lookAtPredecessor(ctx context.Context, watch bool) (released, vouched, ended bool, held time.Duration, _ <-chan zk.Event, _ error) {
	p := h.t.prev
	foreign := false
	switch info, ok := ParseName(p); {
	case p != "" && (!ok || info.Convention != "herald"):
		foreign = true
	case p == "" && (h.t.seq == 0 || h.t.seq == 1 && h.t.madeOffice || h.t.noneGone):
		// The group's first child (but for the office made with it), or
		// no child of the group ever went (a persistent node made before
		// ours is no owner): nothing came before it in this group.
		return h.nobodyBefore(ctx, watch)
	}
	ours := func(r *Release) bool {
		if r == nil {
			return false
		}
		if p != "" {
			return r.Node == p
		}
		return releasedJustBefore(r.Node, h.t.seq, h.t.madeOffice)
	}
	c := h.q.s.Conn()
	type read struct {
		b  []byte
		st *zk.Stat
		ch <-chan zk.Event
	}
	r, err := call(ctx, func() (read, error) {
		if watch && !foreign {
			b, st, ch, err := c.GetW(h.q.parent)
			return read{b, st, ch}, err
		}
		b, st, err := c.Get(h.q.parent)
		return read{b: b, st: st}, err
	})
	m, _ := decodeMark(r.b)
	if r.st != nil && staleMark(m, r.st.Czxid) {
		m = groupMark{}
	}
	switch {
	case foreign:
		return h.foreignReleased(ctx, watch, m, err)
	case err != nil:
		return false, false, false, 0, nil, err
	case ours(m.Released):
		return true, m.Released.Vouches, false, m.Released.Held, nil, nil
	case p == "" && m.accountedBefore(h.t.seq, h.t.madeOffice):
		if m.Released == nil {
			return h.nobodyBefore(ctx, watch)
		}
		return true, m.Released.Vouches, false, m.Released.Held, nil, nil
	}
	o, och, err := h.readOfficeW(ctx, watch)
	if r.st != nil && o.Released != nil && staleMark(groupMark{Released: o.Released}, r.st.Czxid) {
		o.Released = nil // the office may be younger than its records; the group is not
	}
	switch {
	case err != nil:
		return false, false, false, 0, r.ch, err
	case ours(o.Released):
		return true, o.Released.Vouches, false, o.Released.Held, nil, nil
	}
	var nch <-chan zk.Event
	if p != "" {
		var noted bool
		if noted, vouched, nch = h.predecessorNoted(ctx, watch); noted {
			return true, vouched, false, 0, nil, nil
		}
	}
	ended, err = h.predecessorSessionEnded(ctx)
	if err != nil || ended {
		return ended, false, ended, 0, nil, err
	}
	return false, false, false, 0, firstOf(r.ch, och, nch), nil
}

// staleMark reports whether mark m, read from a group node made at zxid
// czxid, was written by an owner of a node made before it: of an earlier
// group at the same path, deleted with its children (a deleteall) and
// made anew. RecordStopped reads the group node before it writes, and a
// group made anew between the two, at the version it read (0 for both
// when nothing was ever recorded), takes the deposed owner's record,
// whose release would vouch, by sequence, for the new group's owners. The
// mark, built on the old group's, then says nothing of this one. The same
// holds of a record the office took (see recordStoppedInOffice), against
// the group node's czxid, not the office's: an office may be made after
// the owner whose record it takes.
func staleMark(m groupMark, czxid int64) bool {
	return m.Released != nil && m.Released.Term != 0 && m.Released.Term < czxid
}

// foreignReleased is lookAtPredecessor's answer for a foreign client's
// predecessor, gone, given the group's mark m (read with err). Its
// release records nothing, and no bound is known for its work. It vouches
// for the owners before it only where the mark accounts for every node
// made before it, by a release that vouches (or none) and withdrawals.
func (h *Handle) foreignReleased(ctx context.Context, watch bool, m groupMark, err error) (released, vouched, ended bool, held time.Duration, _ <-chan zk.Event, _ error) {
	if ps, ok := ParseSequence(h.t.prev); ok && err == nil {
		vouched = m.accountedBefore(ps, false) && (m.Released == nil || m.Released.Vouches)
		if vouched && m.Released == nil {
			return h.nobodyBefore(ctx, watch)
		}
	}
	return true, vouched, false, 0, nil, nil
}

// readOfficeW reads the office (empty when there is none, or it holds no
// herald record), with watch also watching it: for its creation when it
// is missing. A record that stopped work lands there when herald may not
// write the group node (see recordStoppedInOffice).
func (h *Handle) readOfficeW(ctx context.Context, watch bool) (Office, <-chan zk.Event, error) {
	c, p := h.q.s.Conn(), h.q.full(OfficeNode)
	r, err := readNode(ctx, c, p, watch)
	if errors.Is(err, zk.ErrNoNode) && watch {
		type look struct {
			found bool
			ch    <-chan zk.Event
		}
		var l look
		l, err = call(ctx, func() (look, error) {
			found, _, ch, err := c.ExistsW(p)
			return look{found, ch}, err
		})
		r.ch = l.ch
		if err == nil && l.found {
			return Office{}, r.ch, nil // made just now: the watch fires, look again
		}
	}
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return Office{}, r.ch, nil
	case err != nil:
		return Office{}, nil, err
	}
	o, _ := decodeOffice(r.data, r.st)
	return o, r.ch, nil
}

// firstOf is a channel that gets the first event of chs (nil ones never
// send); nil when all are nil.
func firstOf(chs ...<-chan zk.Event) <-chan zk.Event {
	chs = slices.DeleteFunc(chs, func(ch <-chan zk.Event) bool { return ch == nil })
	switch len(chs) {
	case 0:
		return nil
	case 1:
		return chs[0]
	}
	out := make(chan zk.Event, 1)
	var once sync.Once
	for _, ch := range chs {
		// Each watch fires once, at the latest when its session ends.
		go func() {
			ev := <-ch
			once.Do(func() { out <- ev })
		}()
	}
	return out
}

// RecordStopped says, once ownership has ended with our node gone while
// our session lives (someone deleted it by hand, or it went while the
// connection was down), that the owner's work has stopped: it writes
// herald's mark on the group node naming our node, as a release would
// have. The next herald owner cannot tell such a deletion from a
// session's end, after which no runner's command still runs; a runner
// that has not heard of the deletion (frozen, or cut off) may. So `herald
// run` and `herald lock` wait, before they start their command, for this
// record or for the longest such a runner takes to stop its own; the
// record ends the wait as soon as the deposed command is stopped.
//
// Call it only once the work has stopped. It writes nothing when
// ownership has not ended, its term is unknown, our node still exists (a
// release deletes it), the session is gone (the next owner waits its
// bound), the group node was made anew since our node (see
// groupMadeAnew), holds someone else's data or may not be written, or a
// release of ours or of a later owner is already recorded there. Like a release for any reason but a resignation, it writes the
// mark twice, in one transaction.
func (h *Handle) RecordStopped(ctx context.Context) error {
	select {
	case <-h.done:
		h.unmarkRunning(ctx) // the work has stopped
	default:
	}
	select {
	case <-h.done:
	default:
		return nil
	}
	term := h.Term()
	q := h.q
	if term == 0 || q.s.gone() != nil {
		return nil
	}
	c := q.s.Conn()
	there, _, err := call2(ctx, func() (bool, *zk.Stat, error) { return c.Exists(h.NodePath()) })
	if err != nil || there {
		return err
	}
	rec := &Release{Node: h.t.name, ID: h.id, Term: term, Reason: ReasonDeleted, Time: time.Now().UTC(), Vouches: h.vouched.Load()}
	if anew, err := h.groupMadeAnew(ctx, term); anew || err != nil {
		return err
	}
	if q.markState() == markDenied {
		return h.recordStoppedInOffice(ctx, rec)
	}
	for tries := 0; tries < 4; tries++ {
		b, st, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return c.Get(q.parent) })
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrNoAuth), err == nil && !markable(b):
			return h.recordStoppedInOffice(ctx, rec)
		case err != nil:
			return err
		case st.Czxid > term:
			return nil // made anew meanwhile (see groupMadeAnew)
		}
		if r := decodeMarkRelease(b); r != nil && (r.Node == h.t.name || h.laterThanOurs(r)) {
			return nil
		}
		// Written twice, as every release for a reason other than a
		// resignation or release is: observers take a mark written once,
		// the last owner's session queued again, for a resignation
		// without reading it (see reader.readRelease), and a runner that
		// rejoins does queue again.
		data, _ := q.releaseMarkOver(rec, b, h.aboveGone())
		res, err := multi(ctx, c, markWrites(q.parent, data, st.Version, 2)...)
		switch {
		case failedAt(res, 0, zk.ErrBadVersion):
			continue
		case errors.Is(err, zk.ErrNoAuth) || failedAt(res, 0, zk.ErrNoAuth):
			q.setMark(markDenied)
			return h.recordStoppedInOffice(ctx, rec)
		}
		return err
	}
	return nil
}

// groupMadeAnew reports whether the group node now at our group's path
// was made after our node (a deleteall, and a copy that joined again):
// or is missing. RecordStopped then records nothing. Its record vouches
// for the owners before the node it names, matched by sequence alone, so
// written into the group made anew it vouched for that group's owners,
// and a copy behind the new group's first owner, frozen and its node
// deleted by hand, started its command 3.4 s beside the frozen one's
// (found by an adversarial test). What was ours went with the old group
// node; nobody in the new group waits for our record.
// term, our node's czxid, dates our node.
func (h *Handle) groupMadeAnew(ctx context.Context, term int64) (bool, error) {
	c := h.q.s.Conn()
	there, st, err := call2(ctx, func() (bool, *zk.Stat, error) { return c.Exists(h.q.parent) })
	switch {
	case err != nil:
		return false, err
	case !there:
		return true, nil
	}
	return st.Czxid > term, nil
}

// recordStoppedInOffice is RecordStopped where herald may not write the
// group node (someone else's data, its ACL): an election's office takes
// the record, as it takes a release there (see deleteRecorded), unless it
// already holds ours or a later owner's. In a group that may hold no
// office (a lock) our session node takes it, where we keep one (see
// sessionNote); else the next owner waits its bound.
func (h *Handle) recordStoppedInOffice(ctx context.Context, rec *Release) error {
	q := h.q
	if sideNodesRefused(q.parent, h.t.name) != nil {
		live := q.ownSessionNode(h.t.name)
		if live == "" {
			return nil
		}
		w := sessionNoteWrite(live, q.parent, h.t.name, rec.Reason, rec.Vouches, q.s.Timeout(), q.o.waits)
		_, err := call(ctx, func() (*zk.Stat, error) { return q.s.Conn().Set(w.Path, w.Data, -1) })
		if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNoAuth) {
			return nil
		}
		return err
	}
	c := q.s.Conn()
	for tries := 0; tries < 4; tries++ {
		b, st, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return c.Get(q.full(OfficeNode)) })
		data, _ := json.Marshal(Office{Herald: 1, Released: rec})
		switch {
		case errors.Is(err, zk.ErrNoNode):
			_, err = call(ctx, func() (string, error) { return c.Create(q.full(OfficeNode), data, 0, q.sideACL(ctx)) })
		case errors.Is(err, zk.ErrNoAuth):
			return nil
		case err != nil:
			return err
		default:
			o, _ := decodeOffice(b, st)
			if later, _ := o.laterTerm(rec.Term); later != 0 || o.Released != nil && o.Released.Node == rec.Node {
				return nil
			}
			_, err = call(ctx, func() (*zk.Stat, error) { return c.Set(q.full(OfficeNode), data, st.Version) })
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists):
			continue // written meanwhile: read it again
		case errors.Is(err, zk.ErrNoAuth), errors.Is(err, zk.ErrNoNode):
			return nil
		}
		return err
	}
	return nil
}

// laterThanOurs reports whether the release r recorded is a later
// owner's than ours: by its term, or, when a release recorded no term (it
// came before its owner learned it), by its node's sequence.
func (h *Handle) laterThanOurs(r *Release) bool {
	if r.Term > h.Term() {
		return true
	}
	rs, ok := ParseSequence(r.Node)
	return ok && SeqLess(h.t.seq, rs)
}

// releasedJustBefore reports whether the released node, whose owner's
// release herald recorded, was the last child made in the group before
// our node (sequence seq), which found nothing below it. ZooKeeper
// numbers a sequential child with the number of children created in the
// group before it (deletes do not count), so that is so when seq is one
// more than the released node's. Then nobody else can have owned between
// that release and our listing: a node that owned after it was made after
// it (every older node was gone when it owned), and before ours (a later
// one queues behind ours), and there was none. Any other node made in
// between (a foreign client, a side node, a waiter that gave up where the
// group node could not take its note) proves nothing either way, and the
// caller waits as for an owner deleted by hand. A busy group loses
// nothing by it: its next owner queued before the release and saw its
// predecessor. madeOffice: the transaction that
// made our node made the office just before it, which took the number
// before ours.
func releasedJustBefore(released string, seq int32, madeOffice bool) bool {
	rs, ok := ParseSequence(released)
	d := uint32(seq) - uint32(rs)
	return ok && (d == 1 || d == 2 && madeOffice)
}
