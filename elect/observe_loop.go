package elect

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Observe streams the changes of one group, computed from one children
// watch (NodeChildrenChanged), a data watch on the owner's node (it fires
// NodeDeleted the moment the owner goes) and one on herald's office node
// (acknowledgments, and why a leader let go). The first change is a
// Snapshot; after a lost connection the observer says Unknown and, once
// reconnected, sends a fresh Snapshot. It works on groups written by
// herald and by other clients (Curator, Kazoo, go-zookeeper, the seeds'
// names): anything whose children end in a ZooKeeper sequence.
func Observe(ctx context.Context, s *Session, group string, opts ...ObserveOption) (*Observer, error) {
	if s == nil {
		return nil, errors.New("elect: nil session")
	}
	if err := ValidatePath(group); err != nil {
		return nil, err
	}
	oo := observeOptions{buffer: 64}
	for _, opt := range opts {
		if opt == nil {
			return nil, errNilOption
		}
		if err := opt(&oo); err != nil {
			return nil, err
		}
	}
	if r, ok := oo.rules.For(group); ok && oo.recipe == "" {
		oo.recipe = r
	}
	if oo.since == nil && oo.after != nil {
		oo.since = oo.after
		oo.since.Group = group
	}
	o := &Observer{ch: make(chan Change, oo.buffer), done: make(chan struct{})}
	ob := &observation{o: o, s: s, r: reader{conn: s.Conn(), group: group, recipe: oo.recipe, hint: hintOf(oo.since), ownerBefore: hadOwner(oo.since)}, before: oo.since}
	ob.r.sawMissing, ob.r.missingUp = missingAt(oo.since)
	// The group node, and the nodes in it: the owner's and the office.
	stop := watchLate(s, &ob.lateMark, func(p string) bool { return p == group || path.Dir(p) == group })
	go func() {
		defer stop()
		ob.run(ctx)
	}()
	return o, nil
}

func (o *Observer) finish(err error) {
	o.mu.Lock()
	o.err = err
	o.mu.Unlock()
}

// observation is one observer's loop. It goes through three states:
//
//   - suspended: no connection; after saying Unknown once, wait for the
//     session to come back (or end);
//   - snapshot/diff: read the group (the children, the owner, the office)
//     and emit what changed since the last read (everything, the first
//     time and after a suspension);
//   - awaiting: wait for one of the armed watches to fire, then take every
//     other watch that fired with it, so one read answers them all.
//
// The group's path is its reader's (r.group), kept once: ObserveMany
// holds an observation per group.
type observation struct {
	o    *Observer
	s    *Session
	r    reader
	prev *View
	// listedAt is when the newest listing of the group was answered (unix
	// ns, see unixNs): the lease vouches for the view it gave only from
	// there on (see unseen).
	listedAt int64
	// before is the last view before a stretch not seen (a suspension, or
	// Since): the next snapshot is measured against it.
	before *View
	// The armed watches, and which fired since the last read.
	childW, existsW, officeW, ownerW <-chan zk.Event
	lateMark
	childrenFired, officeFired bool
	// childGone: the children watch fired for the group's deletion, the
	// first change to its children since the read that set it (see
	// deletedUnseen).
	childGone bool
	// unread: a watch fired since the last read that succeeded, so the
	// last view may be out of date (see vouched).
	unread bool
}

// lateMark tells whether an observer saw its changes late (see stall.go).
//
// Its moments are unix ns (see unixNs) and its flags sit together: every
// group of an ObserveMany holds one.
type lateMark struct {
	// after: what fired since the last read happened after this moment
	// (see fired.after); 0 when not known.
	after int64
	// fired is, for an observer whose watches come on channels (Observe,
	// ObserveSingle), Session.Answered as the first of its watches fired
	// since the last read, in unix ns (0 for none): noted on the client's
	// receive loop (onEvent), in reply-stream order, as ObserveMany notes
	// fired.after.
	fired atomic.Int64
	// lastConn is the session's connection the last read that succeeded
	// was sent on (Session.connection; 0 before the first), lastSent
	// when; next* are the read under way's, and moved says it is on a
	// later connection (see reading).
	lastConn, nextConn uint64
	lastSent, nextSent int64
	// firedOpen is Session.openConn as the first of the observer's
	// watches fired since the last read (noted as fired is; 0 for none),
	// and open the least such since the last read that succeeded.
	firedOpen atomic.Uint64
	open      uint64
	// behind: a watch fired while the session's member was behind the
	// ZooKeeper leader (Session.leaderBehind), since the last read.
	behind atomic.Bool
	moved  bool
}

// reading notes a read about to be sent on the session's connection. One
// on a later connection than the last read, with no stretch not seen
// between them (an observer busy while the connection came and went,
// which never said Unknown), reads what changed while there was none:
// the events of the nodes that changed meanwhile come when the client
// sets its watches again, at the reconnect, and the changes they tell of
// happened before it, at moments nobody saw. They happened after the
// newest moment the connection of the last read vouched for, and after
// that read was sent (its listing showed none of them): late marks them
// seen late from there.
//
// Unless the read's connection had had those events before it was sent,
// and none of the observer's watches fired since its last read but after
// they came (openConn): what it reads then changed on that connection,
// and was seen as it was made. ObserveMany reads no group whose watches
// did not fire at the reconnect, so its next read may come long after
// (found by a test: a change long after a short loss marked seen late
// from before the loss).
func (m *lateMark) reading(s *Session) {
	if o := m.firedOpen.Swap(0); o != 0 {
		m.heardOpen(o)
	}
	m.nextConn, m.nextSent = s.connection(), time.Now().UnixNano()
	if m.lastConn == 0 || m.nextConn == m.lastConn {
		return
	}
	if s.openConn() >= m.nextConn && (m.open == 0 || m.open >= m.nextConn) {
		return
	}
	m.moved = true
	m.heard(max(unixNs(s.vouchedLeaving(m.lastConn)), m.lastSent))
}

// heard notes when what fired happened after (unix ns, 0: not known):
// the earliest such moment until a read shows what it was.
func (m *lateMark) heard(after int64) {
	if after != 0 && (m.after == 0 || after < m.after) {
		m.after = after
	}
}

// heardOpen notes Session.openConn as a watch fired (see firedOpen).
func (m *lateMark) heardOpen(o uint64) {
	if m.open == 0 || o < m.open {
		m.open = o
	}
}

// noteFired runs on the client's receive loop for a watch event of the
// observer's: the first since the last read keeps what the session
// vouches for now (vouchedAsOf: a member cut off from the leader answers
// from a copy that no longer changes, so its replies date nothing).
func (m *lateMark) noteFired(s *Session) {
	if at := s.vouchedAsOf(); !at.IsZero() {
		m.fired.CompareAndSwap(0, at.UnixNano())
	}
	m.firedOpen.CompareAndSwap(0, max(s.openConn(), 1))
	if s.leaderBehind() {
		m.behind.Store(true)
	}
}

// takeFired hears what noteFired kept, before a read.
func (m *lateMark) takeFired() {
	m.heard(m.fired.Swap(0))
}

// late marks changes the observer may have seen late: when its process
// stalled after the moment what fired is known to have happened after,
// each change happened somewhere from then on (Change.NotBefore).
//
// So may changes one read found together with owners that came and went
// unseen (a Change with Gap): the read came after more than one change,
// late for all but the last (a member cut off from the leader catching up,
// a burst of short tenures), so none of them is dated exactly by it.
//
// And so may changes whose watch fired while the session's member was
// behind the ZooKeeper leader (Session.leaderBehind): it delivers what
// changed while it was cut off when it catches up, all at once.
//
// And so may changes read on a later connection than the last read
// (see reading): they may have happened while there was none.
func (m *lateMark) late(cs []Change) {
	after := nsTime(m.after)
	m.after = 0
	behind := m.behind.Swap(false)
	moved := m.moved
	m.moved, m.lastConn, m.lastSent, m.open = false, m.nextConn, m.nextSent, 0
	if after.IsZero() || !stalls.since(after) && !missedSome(cs) && !behind && !moved {
		return
	}
	for i := range cs {
		if cs[i].Kind != Snapshot && cs[i].Kind != Unknown {
			cs[i].NotBefore = after
		}
	}
}

// missedSome reports whether a change of cs, other than a snapshot, says
// that owners may have come and gone unseen before it.
func missedSome(cs []Change) bool {
	for _, c := range cs {
		if c.Gap && c.Kind != Snapshot && c.Kind != Unknown {
			return true
		}
	}
	return false
}

// watchLate has the stall watch run for an observer of paths (a group and
// the nodes in it, or a single node), and its watch events noted on m,
// until the returned func is called.
func watchLate(s *Session, m *lateMark, mine func(path string) bool) (stop func()) {
	stalls.acquire()
	unwatch := s.onWatch(func(ev zk.Event) {
		if ev.Type != zk.EventSession && mine(ev.Path) {
			m.noteFired(s)
		}
	})
	return func() {
		unwatch()
		stalls.release()
	}
}

// errStop ends the loop; the observer's Err is already set.
var errStop = errors.New("elect: observer stopped")

func (ob *observation) run(ctx context.Context) {
	ob.childrenFired = true
	ob.o.loop(ctx, ob.s, ob.suspended, ob.step)
}

// loop is every observer's state loop: while the session is connected,
// step reads and waits for the next watch; while it is not, suspended
// waits for it to come back; when it is lost, the observer ends. A step
// or suspended that returns an error (errStop) ends it too.
func (o *Observer) loop(ctx context.Context, s *Session, suspended, step func(context.Context, <-chan struct{}) error) {
	defer close(o.done)
	defer close(o.ch)
	for {
		st, changed := s.State()
		var err error
		switch st {
		case StateLost, StateClosed:
			o.finish(s.Err())
			return
		case StateConnecting, StateSuspended:
			err = suspended(ctx, changed)
		default:
			err = step(ctx, changed)
		}
		if err != nil {
			return
		}
	}
}

// step reads the group, emits the changes and waits for the next watch.
func (ob *observation) step(ctx context.Context, changed <-chan struct{}) error {
	ob.takeFired()
	ob.reading(ob.s)
	gone := ob.childGone
	ob.childGone = false
	v, err := ob.read(ctx, changed)
	if err != nil {
		return ob.readFailed(ctx, err)
	}
	v.goneQuiet = gone && !v.Exists
	ob.childrenFired, ob.officeFired, ob.unread = false, false, false
	changes := diff(ob.prev, v)
	if ob.prev == nil && ob.before != nil {
		changes, ob.before = []Change{snapshotAfter(ob.before, v)}, nil
	}
	ob.late(changes)
	if !ob.emit(ctx, changes) {
		return errStop
	}
	ob.setLast(v)
	return ob.await(ctx, changed)
}

// suspended says Unknown once and waits for the session to change state.
func (ob *observation) suspended(ctx context.Context, changed <-chan struct{}) error {
	if ob.prev != nil {
		held := vouched(ob.s, ob.unread, pending(ob.childW, ob.existsW, ob.officeW, ob.ownerW))
		if !ob.emit(ctx, []Change{ob.unknown()}) {
			return errStop
		}
		ob.unseen(held)
	}
	select {
	case <-changed:
		return nil
	case <-ctx.Done():
		ob.o.finish(ctx.Err())
		return errStop
	}
}

// unknown is the change that says the group can no longer be seen.
func (ob *observation) unknown() Change {
	return Change{Kind: Unknown, Group: ob.r.group, Recipe: ob.prev.Recipe, Zxid: ob.prev.Pzxid}
}

// vouched is the newest moment ZooKeeper vouched for an observation's last
// view as the connection went (Session.vouchedAsOf): zero when a watch fired
// since the view was read (unread: one was taken; fired: one is waiting to
// be taken), since the owner may have gone already. Answered is read
// first: every event that came before the reply it stands for has reached
// its watch by then.
func vouched(s *Session, unread bool, fired func() bool) time.Time {
	at := s.vouchedAsOf()
	if unread || fired() {
		return time.Time{}
	}
	return at
}

// pending reports whether an event waits on any of the watches.
func pending(ws ...<-chan zk.Event) func() bool {
	return func() bool {
		for _, w := range ws {
			if len(w) > 0 {
				return true
			}
		}
		return false
	}
}

// unseen starts a stretch the observation does not see: the next snapshot
// is measured against the last view, which ZooKeeper vouched for up to
// held (zero: not known), and everything is read afresh.
//
// A held before the listing the view came from was answered (the newest
// sync the leader answered was sent before it) vouches for nothing: the
// member may have answered the listing from a copy the leader had left
// behind, and the owner it showed may have gone before the listing.
func (ob *observation) unseen(held time.Time) {
	if unixNs(held) < ob.listedAt {
		held = time.Time{}
	}
	if ob.prev != nil {
		b := *ob.prev
		b.heldAsOf = unixNs(held)
		ob.prev = &b
	}
	ob.before, ob.prev, ob.officeW, ob.ownerW, ob.after = ob.prev, nil, nil, nil, 0
	ob.r.owner, ob.r.ownerW = nil, nil
	ob.childrenFired = true
}

// read reads what the fired watches say may have changed: the office
// alone after an acknowledgment, else the whole group.
func (ob *observation) read(ctx context.Context, changed <-chan struct{}) (View, error) {
	cctx, cancel := stateCtx(changed, ctx.Done())
	defer cancel()
	if !ob.childrenFired && ob.officeFired && ob.prev != nil && ob.prev.Exists {
		v := *ob.prev
		var err error
		v.Office, v.OfficeZxid, ob.officeW, err = ob.r.readOffice(cctx, true)
		if errors.Is(err, zk.ErrNoNode) {
			v.Office, err = nil, nil
			ob.childrenFired = true // gone: the children watch tells the rest
		}
		return v, err
	}
	// After a release recorded in the office, the next in line most
	// likely owns now: read it beside the listing.
	guess := ""
	if ob.officeFired && ob.prev != nil && len(ob.prev.Queue) > 1 {
		guess = ob.prev.Queue[1].Node
	}
	v, w, err := ob.r.readGuess(cctx, true, ob.officeW == nil, guess, ob.officeFired && ob.prev != nil && ob.prev.Office != nil)
	// Taken once the replies are in: a sync sent (goroutine of its own)
	// after the request was asked for but written before it vouched for a
	// state older than the one the listing showed, and an owner that came
	// between the two was said to hold before it did.
	ob.listedAt = time.Now().UnixNano()
	ob.childW, ob.existsW, ob.ownerW = w.children, w.exists, w.owner
	if w.office != nil {
		ob.officeW = w.office
	}
	return v, err
}

// readFailed decides what a failed read means (see readEnds); after a
// lost connection the group is listed again.
func (ob *observation) readFailed(ctx context.Context, err error) error {
	if readEnds(ctx, err, ob.r.group, ob.o.finish) {
		return errStop
	}
	ob.childrenFired = true
	return nil
}

// readEnds reports whether a failed read of an observer of path ends it,
// finishing it with why: its context ended, its session expired, or any
// error but a lost connection, which the session's state loop handles.
func readEnds(ctx context.Context, err error, path string, finish func(error)) bool {
	switch {
	case ctx.Err() != nil:
		finish(ctx.Err())
	case expired(err):
		finish(ErrSessionLost)
	case connLoss(err) || errors.Is(err, context.Canceled):
		return false
	default:
		finish(observeErr(path, err))
	}
	return true
}

// observeErr puts an observer's read error in context: the group, unless
// the error names it already (see unlistable).
func observeErr(group string, err error) error {
	if strings.Contains(err.Error(), group) {
		return err
	}
	return fmt.Errorf("elect: observe %s: %w", group, err)
}

// await waits for a watch to fire, then takes the others that fired with
// it: one transaction often fires several (a resignation deletes the
// owner's node and writes the office).
func (ob *observation) await(ctx context.Context, changed <-chan struct{}) error {
	select {
	case ev := <-ob.childW:
		ob.childrenFired, ob.unread = true, true
		ob.childGone = ob.childGone || ev.Type == zk.EventNodeDeleted // closed once fired: a zero Event
	case <-ob.existsW:
		ob.childrenFired, ob.unread = true, true
	case <-ob.officeW:
		ob.officeW, ob.officeFired, ob.unread = nil, true, true
	case ev := <-ob.ownerW:
		ob.ownerFired(ev)
		ob.unread = true
		if ev.Type == zk.EventNodeDeleted {
			// The deletion fires the children watch right behind this
			// one, in the same reply stream: wait for it so that one
			// read answers both.
			awaitFired(ob.childW)
			ob.childW, ob.existsW = nil, nil
		}
	case <-changed:
		ob.childrenFired = true
	case <-ctx.Done():
		ob.o.finish(ctx.Err())
		return errStop
	}
	ob.drainFired()
	return nil
}

// drainFired takes the watches that fired together with the one awaited.
func (ob *observation) drainFired() {
	select {
	case ev := <-ob.childW:
		ob.childrenFired, ob.unread = true, true
		ob.childGone = ob.childGone || ev.Type == zk.EventNodeDeleted // closed once fired: a zero Event
	default:
	}
	select {
	case ev := <-ob.ownerW:
		ob.ownerFired(ev)
		ob.unread = true
	default:
	}
	select {
	case <-ob.officeW:
		ob.officeW, ob.officeFired, ob.unread = nil, true, true
	default:
	}
	if ob.childrenFired {
		ob.childW, ob.existsW = nil, nil
	}
}

// ownerFired: the owner's node went, or someone wrote it. A write is no
// release (nothing herald does writes a queue node) and changes nobody's
// identity: the group is read again with the owner's details kept and its
// watch set again.
func (ob *observation) ownerFired(ev zk.Event) {
	ob.ownerW, ob.r.ownerW = nil, nil
	if ev.Type != zk.EventNodeDataChanged {
		ob.r.owner = nil
	}
	ob.childrenFired = true
}

func (ob *observation) emit(ctx context.Context, cs []Change) bool { return ob.o.emit(ctx, cs) }

// emit sends changes in order, waiting for the reader (nothing is dropped);
// false when ctx ended first.
func (o *Observer) emit(ctx context.Context, cs []Change) bool {
	for _, c := range cs {
		select {
		case o.ch <- c:
		case <-ctx.Done():
			o.finish(ctx.Err())
			return false
		}
	}
	return true
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

// setLast records v as the observation's latest view.
func (ob *observation) setLast(v View) {
	ob.prev = &v
	ob.o.mu.Lock()
	ob.o.last = &v
	ob.o.mu.Unlock()
}
