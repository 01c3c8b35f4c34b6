package elect

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Handle is held ownership of an election (leadership) or a lock. Done is
// closed the moment the ownership is no longer safe; Reason and Err say why.
// A Handle must be released (Resign or Release) or its session closed.
type Handle struct {
	q        *queue
	t        ticket
	id       string
	since    time.Time
	office   atomic.Bool // herald-office is believed to exist
	done     chan struct{}
	doneOnce sync.Once
	mu       sync.Mutex
	reason   Reason
	err      error
	stop     chan struct{}
	stopOnce sync.Once
	monDone  chan struct{}
	released atomic.Bool
	// hurry is closed by Resign and Release: a give-back waiting for the
	// owner to stop (see giveBack) deletes our node at once; gaveBack is
	// closed once such a give-back has run.
	hurry      chan struct{}
	hurryOnce  sync.Once
	gaveBack   chan struct{}
	givingBack atomic.Bool
	// The term is our node's czxid, learned from the stat the monitor's
	// first watch on our node returns (see Term).
	term      atomic.Int64
	termKnown chan struct{}
	termOnce  sync.Once
	// guarded is closed once a listing of the group since ownership began
	// found no client that cannot read our node (see Guarded).
	guarded   chan struct{}
	guardOnce sync.Once
	// inert holds the nodes the guard found named like a client's but
	// held by no session (see guard); only the monitor uses it.
	inert map[string]bool
	// waiting holds the herald sessions the guard found saying that they
	// wait for their predecessor's stop (see sessionWaits); only the
	// monitor uses it.
	waiting map[int64]bool
	// prevEnded: PredecessorReleased last found the predecessor's session
	// ended (ProveSessionEnd); prevVouched: that its answer vouched for
	// the owners before the predecessor too (see PredecessorVouched).
	prevEnded, prevVouched atomic.Bool
	// unproven is why the last look could not prove the predecessor's
	// session ended (a string; see SessionEndUnproven).
	unproven atomic.Value
	// foreign: a listing of the guard's held a participant that owns as
	// soon as our node goes (see ForeignInGroup).
	foreign atomic.Bool
	// prevGoneBy: the last look that found the predecessor's release on
	// record, less how long the record says it held (see
	// PredecessorLowestSince); zero when it says nothing.
	prevGoneBy atomic.Int64
	// vouched: see Vouch.
	vouched atomic.Bool
	// runNote is the path of our run note while we keep one (see
	// MarkRunning); runBeside: see RunsBeside.
	runNote   atomic.Pointer[string]
	runBeside atomic.Bool
	// timeoutsListed: the live session nodes' timeouts were read (see
	// learnLiveTimeouts).
	timeoutsListed atomic.Bool
	// timeoutsTried: learnLiveTimeouts has looked (see TimeoutsUnread).
	timeoutsTried atomic.Bool
	// markSeen is the group node as the monitor read it, with a watch, a
	// second into the tenure, for the release (see readMark); nil until
	// then, and from the moment the watch fires until the read after it.
	markSeen atomic.Pointer[groupData]
	// gone: the numbers after our node's a listing showing it found gone
	// (see goneAbove), the waiter's, then a look during the tenure's;
	// guarded by mu.
	gone []seqRun
}

func newHandle(q *queue, t ticket, id string) *Handle {
	h := &Handle{q: q, t: t, id: id, since: time.Now(), done: make(chan struct{}), stop: make(chan struct{}), monDone: make(chan struct{}), termKnown: make(chan struct{}), guarded: make(chan struct{}),
		hurry: make(chan struct{}), gaveBack: make(chan struct{}), gone: t.aboveGone}
	if t.czxid != 0 {
		h.learnTerm(t.czxid)
	}
	// The office, once created (by an acknowledgment or a recorded
	// release), persists: try to write it first, and create it only when
	// that fails.
	h.office.Store(true)
	go h.monitor()
	return h
}

// Done is closed when ownership ends: released, resigned, session
// suspended (under LoseOnSuspend) or expired, node deleted by someone else.
func (h *Handle) Done() <-chan struct{} { return h.done }

// Reason says why Done was closed (empty while held).
func (h *Handle) Reason() Reason {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reason
}

// Err is nil while held and after a voluntary release; otherwise the error
// that ended ownership (ErrSessionLost, ErrNodeDeleted, ...).
func (h *Handle) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Term is the fencing token: the czxid of our node. Terms only grow within
// a group, so a resource that remembers the highest term it has seen can
// refuse a deposed owner.
//
// herald does not spend a request on the term while waiting: it comes with
// the watch every handle sets on its own node as ownership begins, so the
// first call may wait about one round trip (longer while the connection
// is down: until it is back or ownership ends). If ownership ends before
// the term arrives, Term returns 0, which every fence refuses. Checkpoint
// and Acknowledge wait for it no longer than their context.
func (h *Handle) Term() int64 {
	select {
	case <-h.termKnown:
	case <-h.done:
		select {
		case <-h.termKnown:
		default:
			return 0
		}
	}
	return h.term.Load()
}

func (h *Handle) learnTerm(czxid int64) {
	h.termOnce.Do(func() {
		h.term.Store(czxid)
		close(h.termKnown)
	})
}

// Guarded is closed once the owner has listed its group and found no
// client there that cannot read its node (see WatchForHazards): from then
// on such a client is one that joined later, and the guard sees it join.
// It is never closed while the guard has not started (by default, for
// the first DefaultHazardCheck of a tenure) or is off (NoHazardCheck).
// herald run and herald lock wait for it before they start the command,
// so that a client that came to own while we waited never sees our
// command run beside it.
func (h *Handle) Guarded() <-chan struct{} { return h.guarded }

// Node is our node's name; NodePath its full path; Group the parent.
func (h *Handle) Node() string     { return h.t.name }
func (h *Handle) NodePath() string { return h.q.full(h.t.name) }
func (h *Handle) Group() string    { return h.q.parent }

// ID is the participant id stored in our node.
func (h *Handle) ID() string { return h.id }

// Sequence is our node's sequence number.
func (h *Handle) Sequence() int32 { return h.t.seq }

// Since is when ownership began.
func (h *Handle) Since() time.Time { return h.since }

// Session is the session the ownership lives in.
func (h *Handle) Session() *Session { return h.q.s }

// Participant describes us as observers see us.
func (h *Handle) Participant() Participant {
	return Participant{ID: h.id, Node: h.t.name, Session: h.q.s.ID(), Sequence: h.t.seq, Czxid: h.Term()}
}

func (h *Handle) lose(reason Reason, err error) {
	h.doneOnce.Do(func() {
		h.mu.Lock()
		h.reason, h.err = reason, err
		h.mu.Unlock()
		close(h.done)
	})
}

// stopMonitor tells the monitor to stop without waiting for it: a release
// must not wait on goroutine hand-offs, and the monitor's actions are safe
// to race with it (lose keeps the first reason, giveBack defers to a
// release already under way).
func (h *Handle) stopMonitor() {
	h.stopOnce.Do(func() { close(h.stop) })
}

// monitor watches our own node and the session, and ends ownership when
// either says it is no longer safe; it also guards the group against a
// client that cannot read our node (see guard, WatchForHazards), and keeps
// the group node read for the release (see readMark). Each turn looks at
// the session's state (onState), then waits for what comes next (await).
func (h *Handle) monitor() {
	defer close(h.monDone)
	m := h.newWatches()
	defer m.stop()
	for {
		select {
		case <-h.stop:
			return
		default:
		}
		st, changed := h.q.s.State()
		if h.onState(&m, st, changed) || h.await(&m, st, changed) {
			return
		}
	}
}

// ownerWatches is what the monitor has in place, or is due to set.
type ownerWatches struct {
	own   <-chan zk.Event // our node's watch, set while we waited, if we did
	group <-chan zk.Event // the guard's children watch
	// guarding: the guard is on; start turns it on later (WatchForHazards).
	guarding bool
	start    <-chan time.Time
	// ZooKeeper tells nobody who may not READ a node of its deletion: our
	// node, should someone take READ from us and delete it, goes unheard
	// but for this look without a watch.
	recheck *time.Ticker
	// markAt: the tenure is long enough for the release to want the group
	// node read (markDue), and markW is the watch set with that read.
	markAt  *time.Timer
	markDue bool
	markW   <-chan zk.Event
	startT  *time.Timer
}

func (h *Handle) newWatches() ownerWatches {
	hc := h.q.o.hazard
	m := ownerWatches{
		own:      h.t.ownW,
		guarding: !hc.off && hc.after == 0,
		recheck:  time.NewTicker(time.Duration(recheckEvery.Load())),
		markAt:   time.NewTimer(markRecheckAfter),
	}
	if !hc.off && hc.after > 0 {
		m.startT = time.NewTimer(hc.after)
		m.start = m.startT.C
	}
	return m
}

func (m *ownerWatches) stop() {
	m.recheck.Stop()
	m.markAt.Stop()
	if m.startT != nil {
		m.startT.Stop()
	}
}

// onState acts on the session's state: ownership ends with the session,
// or on suspension where the loss policy says so; while connected, the
// watches missing are set. It reports whether ownership is over.
func (h *Handle) onState(m *ownerWatches, st State, changed <-chan struct{}) bool {
	switch st {
	case StateLost:
		h.lose(ReasonSessionExpired, ErrSessionLost)
		return true
	case StateClosed:
		h.lose(ReasonSessionClosed, ErrSessionClosed)
		return true
	case StateSuspended:
		if h.q.o.policy != LoseOnSuspend {
			return false
		}
		if h.q.s.unheardPastTimeout() {
			h.lose(ReasonSessionExpired, ErrSessionLost)
		}
		h.lose(ReasonSuspended, errors.New("elect: connection to ZooKeeper suspended; ownership given up as the loss policy says"))
		h.giveBack(ReasonSuspended)
		return true
	case StateConnected:
		var over bool
		if m.own == nil {
			m.own, over = h.watchOwn(changed)
		}
		if !over && m.group == nil && m.guarding {
			m.group, over = h.guard(changed)
		}
		if over {
			return true
		}
		if m.markDue && m.markW == nil {
			m.markW, m.markDue = h.readMark(changed)
		}
	}
	return false
}

// await waits for the next thing the monitor acts on: a watch firing, a
// timer, the session's state changing, or the release. It reports whether
// ownership is over.
func (h *Handle) await(m *ownerWatches, st State, changed <-chan struct{}) bool {
	select {
	case ev, ok := <-m.own:
		m.own = nil
		if ok && ev.Type == zk.EventNodeDeleted {
			h.lastLook(m.guarding, changed)
			h.loseNode()
			return true
		}
	case <-m.group: // a child joined or left: list again
		m.group = nil
	case <-m.markAt.C:
		m.markDue = true
	case <-m.markW: // written, deleted, or the watch lost: read again
		m.markW = nil
		h.markSeen.Store(nil)
		m.markDue = true
	case <-m.recheck.C:
		if st == StateConnected && h.ownGone(changed) {
			h.lastLook(m.guarding, changed)
			h.loseNode()
			return true
		}
		if st == StateConnected && m.guarding && h.groupUnlistable(changed) {
			return true
		}
	case <-m.start:
		m.guarding = true
	case <-changed:
	case <-h.stop:
		return true
	}
	return false
}

// readMark reads the group node with a watch for the release: an owner
// that held a second or more must know what the group node holds before
// it writes its mark there (see deleteMarked), and reading it now, rather
// than as it releases, keeps that round trip off the handoff's path. The
// watch tells of any write since, and the monitor reads again; a write the
// release learns of too late only fails its version check. It returns the
// watch, and whether to read again should it fire: not where herald may
// not read or write the group node, or the group is gone.
func (h *Handle) readMark(changed <-chan struct{}) (<-chan zk.Event, bool) {
	if h.q.markState() == markDenied {
		return nil, false
	}
	ctx, cancel := stateCtx(changed, h.stop)
	defer cancel()
	r, ok, err := h.q.readGroupNode(ctx, true)
	switch {
	case err != nil:
		return nil, true // the loop asks again
	case !ok:
		return nil, false
	}
	h.markSeen.Store(&r)
	return r.w, true
}

// loseNode ends ownership because our node is gone. Someone deleted it,
// unless the session has gone unheard for its whole timeout (the process
// stalled): then the servers expired it, and the deletion read on thawing
// is the expiry's, which the client learns of only after.
func (h *Handle) loseNode() {
	if h.q.s.unheardPastTimeout() {
		h.lose(ReasonSessionExpired, ErrSessionLost)
	}
	h.lose(ReasonDeleted, ErrNodeDeleted)
}

// ownGone reads, without a watch, whether our node is gone (false when the
// read fails: the loop looks again).
func (h *Handle) ownGone(changed <-chan struct{}) bool {
	ctx, cancel := stateCtx(changed, h.stop)
	defer cancel()
	_, err := call(ctx, func() (struct{}, error) {
		_, _, err := h.q.s.Conn().Get(h.NodePath())
		return struct{}{}, err
	})
	return errors.Is(err, zk.ErrNoNode)
}

// groupUnlistable looks, without a watch, whether the session may still
// list the group, and gives ownership up when it may not (see
// loseUnlistable); it reports whether it did. ZooKeeper tells a session
// nothing of a node it may no longer READ, the guard's children watch
// included, and an ACL's change fires no watch: only a look finds it.
func (h *Handle) groupUnlistable(changed <-chan struct{}) bool {
	ctx, cancel := stateCtx(changed, h.stop)
	defer cancel()
	_, err := call(ctx, func() (struct{}, error) {
		_, _, err := h.q.s.Conn().Children(h.q.parent)
		return struct{}{}, err
	})
	if !errors.Is(err, zk.ErrNoAuth) {
		return false
	}
	h.loseUnlistable(err)
	return true
}

// loseUnlistable gives ownership up for a group whose ACL no longer lets
// the session list it (someone gave the group to another identity): a
// client that joins and cannot read our node would go unseen and own
// beside us (found by an adversarial test, with Kazoo: 8 s of two owners).
func (h *Handle) loseUnlistable(err error) {
	h.q.s.log.Warn("stepping down: this session may no longer list the group, so a client that joins and cannot read our node would go unseen", "group", h.q.parent, "node", h.t.name)
	h.lose(ReasonGroupUnreadable, fmt.Errorf("elect: the ACL of %s no longer lets this session READ it, so ZooKeeper would not tell it of a client joining that cannot read our node and may believe it owns; gave ownership up: grant the session READ on the group: %w",
		h.q.parent, err))
	h.giveBack(ReasonGroupUnreadable)
}

// watchOwn sets the watch on our node, learning the term from its stat;
// over is true when ownership ended.
func (h *Handle) watchOwn(changed <-chan struct{}) (ch <-chan zk.Event, over bool) {
	ctx, cancel := stateCtx(changed, h.stop)
	ok, st, ch, err := getW(ctx, h.q.s.Conn(), h.NodePath())
	cancel()
	switch {
	case err == nil && !ok:
		h.loseNode()
		return nil, true
	case err == nil:
		h.learnTerm(st.Czxid)
		return ch, false
	case expired(err):
		h.lose(ReasonSessionExpired, ErrSessionLost)
		return nil, true
	case errors.Is(err, zk.ErrNoAuth):
		h.lose(ReasonUnreadable, fmt.Errorf("elect: the ACL of %s does not let this session READ it, so ZooKeeper would not tell it that the node went (and its term is unknown); gave ownership up: grant the session READ in the nodes' ACL (elect.WithACL): %w",
			h.NodePath(), err))
		h.giveBack(ReasonUnreadable)
		return nil, true
	}
	return nil, false // the state changed meanwhile: the loop looks again
}

// guard lists the group with a children watch and steps down when a
// client in it cannot read our node (blindTo): that client may believe it
// owns beside us, and of two owners herald can end only its own tenure.
func (h *Handle) guard(changed <-chan struct{}) (ch <-chan zk.Event, over bool) {
	ctx, cancel := stateCtx(changed, h.stop)
	defer cancel()
	type listing struct {
		c  []string
		st *zk.Stat
		ch <-chan zk.Event
	}
	got, err := call(ctx, func() (listing, error) {
		c, st, ch, err := h.q.s.Conn().ChildrenW(h.q.parent)
		return listing{c, st, ch}, err
	})
	switch {
	case expired(err):
		h.lose(ReasonSessionExpired, ErrSessionLost)
		return nil, true
	case errors.Is(err, zk.ErrNoAuth):
		h.loseUnlistable(err)
		return nil, true
	case err != nil:
		return nil, false // connection trouble: the loop looks again
	}
	es, next := parseListing(got.c, got.st.Cversion)
	h.learnAbove(es, next)
	if over, err := h.wrapped(ctx, es); over || err != nil {
		if !over {
			h.noteForeign(ctx, got.c)
		}
		return nil, over // err: connection trouble, the loop looks again
	}
	var passed map[string]bool // no client's at this listing
	skip := func(c string) bool { return h.inert[c] || passed[c] }
	n, node, blind := blindTo(got.c, h.t.name, skip)
	for blind {
		client, err := h.isClient(ctx, node)
		if err != nil {
			h.noteForeign(ctx, got.c)
			return nil, false // connection trouble: the loop looks again
		}
		if client {
			break
		}
		if passed == nil {
			passed = map[string]bool{}
		}
		passed[node] = true
		n, node, blind = blindTo(got.c, h.t.name, skip)
	}
	if !blind {
		h.guardOnce.Do(func() { close(h.guarded) })
		// After Guarded, which the command waits for: read before it,
		// the waits words of the runners behind us delayed every
		// handoff's start by a round trip each (found by a review). The
		// monitor hears of our node's deletion only after this returns.
		h.noteForeign(ctx, got.c)
		return got.ch, false
	}
	if !h.q.forced() {
		_, _, _ = h.q.learnFrom(got.c, h.t.name) // our next node is one the newcomer reads
	}
	h.q.s.log.Warn("stepping down: a client joined that cannot read our node and may believe it owns", "group", h.q.parent, "node", h.t.name, "client", n.client)
	fix := "no name of herald's can be read by it: give it a group of its own"
	if n.dialect != "" {
		fix = fmt.Sprintf("to share the group with it, give herald the %s dialect (--dialect %s, elect.WithDialect) before it joins", n.dialect, n.dialect)
	}
	h.lose(ReasonTwoOwners, fmt.Errorf("%w: %s joined %s and cannot read our node %s, so it may believe it owns as well; gave up ownership so that one owner is left; %s",
		ErrUnsafeGroup, n.client, h.q.parent, h.t.name, fix))
	h.giveBack(ReasonTwoOwners)
	return nil, true
}

// wrapped steps down (over) when the queue es holds a name past the
// counter's wrap beside a client's that orders it otherwise (wrapHazard):
// that client may believe it owns beside us.
func (h *Handle) wrapped(ctx context.Context, es []entry) (over bool, err error) {
	why, node, err := clientWrapHazard(es, func(node string) (bool, error) {
		if h.inert[node] {
			return false, nil
		}
		return h.isClient(ctx, node) // marks a node that is none inert
	})
	if why == "" || err != nil {
		return false, err
	}
	h.stepDownWrapped(why, node)
	return true, nil
}

func (h *Handle) stepDownWrapped(why, node string) {
	h.q.s.log.Warn("stepping down: the group's counter wrapped, and a client in it may believe it owns", "group", h.q.parent, "node", h.t.name, "client", node)
	h.lose(ReasonTwoOwners, fmt.Errorf("%w: %s; gave up ownership so that one owner is left", ErrUnsafeGroup, why))
	h.giveBack(ReasonTwoOwners)
}

// isClient reports whether node, named like a client that cannot read our
// node, is one: an ephemeral node a session holds. A node no session holds
// (someone created it by hand) is no client that could believe it owns;
// one with a sequence is remembered as inert, and so is one already gone:
// its name never comes back. A name without a sequence does (a client
// locking by creating GROUP/lock makes it on each take), so it is read
// again at each listing that shows it.
func (h *Handle) isClient(ctx context.Context, node string) (bool, error) {
	exists, client, err := clientHolds(ctx, h.q.s.Conn(), h.q.full(node))
	switch {
	case err != nil:
		return false, err
	case client:
		return true, nil
	}
	h.markInert(node, exists)
	return false, nil
}

// markInert remembers node, named like a client's, as held by no session
// (see isClient), when it has a sequence; exists says it is there still,
// a leftover worth a word. One gone still counts as a client next in
// line (ForeignInGroup, see ownsAtOnce): the blind check reads such names
// before the look for one, which then passes over what is remembered.
func (h *Handle) markInert(node string, exists bool) {
	if _, seq := ParseSequence(node); !seq {
		return
	}
	if !exists {
		h.foreign.Store(true)
	}
	if exists {
		h.q.s.log.Warn("a node no session holds is named like a client's; it is no client and owns nothing, so it neither takes our ownership nor costs our command its grace (delete it if it is a leftover)", "group", h.q.parent, "node", node, "ours", h.t.name)
	}
	if h.inert == nil {
		h.inert = map[string]bool{}
	}
	h.inert[node] = true
}

// giveBack deletes our node after ownership was given up for reason (a
// suspension, a step-down), in the background and once the connection is
// back, but not before the owner said it stopped (Resign or Release) or
// GiveBackDelay passed, whichever comes first.
//
// Deleting at once would hand ownership over while the owner, told only
// by Done, may still be at work: after a suspension the client often
// reconnects within milliseconds (to another member, after one was killed
// or restarted) with its session alive, and the next in line would own
// before the old owner's work stopped. Without the deletion, the next
// owner waits for the owner's word, or for the delay, which is no sooner
// than a session cut off when ownership was given up could have expired.
// Otherwise the queue would wait for a session expiry that may never come.
func (h *Handle) giveBack(reason Reason) {
	if h.released.Swap(true) {
		return
	}
	h.givingBack.Store(true)
	s := h.q.s
	wait := GiveBackDelay(s.Timeout())
	s.background(func() {
		defer close(h.gaveBack)
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-h.hurry:
		case <-s.done: // the servers delete our node themselves
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.Timeout()*3+h.q.o.releaseWait)
		defer cancel()
		_ = h.deleteOwn(ctx, reason)
	})
}

// GiveBackDelay is how long, at most, a Handle that lost ownership to a
// suspension or stepped down keeps its node for its owner to stop, given
// the session timeout: a third of it, the soonest the servers could expire
// a session that lost its connection when ownership ended (the client
// gives a silent connection up two thirds of the timeout after it last
// heard, and pings every third). Resign or Release ends the wait at once.
// herald run and herald lock kill their command within a sixth.
func GiveBackDelay(timeout time.Duration) time.Duration { return timeout / 3 }

// Resign gives up leadership; the next candidate in line takes over.
// Calling it (or Release) again, or after ownership ended, does nothing
// more and returns nil. An error (ctx ended, the connection lost) does not
// leave the node: its deletion goes on in the background.
func (h *Handle) Resign(ctx context.Context) error { return h.release(ctx, ReasonResigned) }

// Release gives up the lock; the next waiter in line takes it. Like
// Resign it may be called more than once.
func (h *Handle) Release(ctx context.Context) error { return h.release(ctx, ReasonReleased) }

// release deletes our node. When the connection is lost the deletion goes
// on in the background until it succeeds or the session ends (which deletes
// the node too), so nothing is left orphaned.
func (h *Handle) release(ctx context.Context, reason Reason) error {
	// The work has stopped: its run note goes, after the release, which
	// the next owner waits for.
	defer h.unmarkRunning(ctx)
	if h.released.Swap(true) {
		h.lose(reason, nil)
		h.hurryOnce.Do(func() { close(h.hurry) }) // the owner has stopped: a give-back deletes now
		if h.givingBack.Load() {
			select {
			case <-h.gaveBack:
			case <-ctx.Done():
			}
		}
		return nil
	}
	h.stopMonitor()
	h.lose(reason, nil)
	err := h.deleteOwn(ctx, reason)
	if err == nil || h.q.s.gone() != nil {
		return nil
	}
	h.q.s.background(func() {
		bctx, cancel := context.WithTimeout(context.Background(), h.q.s.Timeout()*3+h.q.o.releaseWait)
		defer cancel()
		_ = h.deleteOwn(bctx, reason)
	})
	return err
}

// aboveGone is what the latest look at the group while our node was there
// found gone after it (see goneAbove).
func (h *Handle) aboveGone() []seqRun {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gone
}

// lookAbove lists the group and learns what went after our node since the
// waiter's last listing (see goneAbove): the office or checkpoint made
// during the tenure took a number, which the release then names. A
// listing that fails, or does not show our node, changes nothing.
func (h *Handle) lookAbove(ctx context.Context) {
	if es, _, _, next, err := h.q.list(ctx); err == nil {
		h.learnAbove(es, next)
	}
}

// learnAbove learns from a listing of the group (es, lowest first, and the
// group's counter then) what went after our node (see goneAbove), when it
// shows our node. The guard's listings, made on every child change from a
// second into the tenure, keep it current.
func (h *Handle) learnAbove(es []entry, next int32) {
	idx := slices.IndexFunc(es, func(e entry) bool { return e.name == h.t.name })
	if idx < 0 {
		return
	}
	if gone, ok := goneAbove(es[idx+1:], h.t.seq, next); ok && len(gone) > 0 {
		h.mu.Lock()
		h.gone = joinRuns(append(h.gone, gone...)) // each look proves its own
		h.mu.Unlock()
	}
}

// deleteOwn removes our node, with a record of why in an election's
// office (see queue.deleteOwn).
func (h *Handle) deleteOwn(ctx context.Context, reason Reason) error {
	rec := &Release{Node: h.t.name, ID: h.id, Term: h.Term(), Reason: reason, Time: time.Now().UTC(), Vouches: h.vouched.Load(), Held: time.Since(h.since)}
	for {
		if h.q.s.gone() != nil {
			return nil // the servers delete our ephemeral node themselves
		}
		t := h.t
		t.aboveGone = h.aboveGone()
		err := h.q.deleteOwn(ctx, t, rec, &h.office, time.Since(h.since), h.markSeen.Swap(nil))
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode):
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case connLoss(err):
			if err := h.q.s.awaitConnected(ctx); err != nil {
				if errors.Is(err, ErrSessionLost) || errors.Is(err, ErrSessionClosed) {
					return nil
				}
				return err
			}
		case expired(err):
			return nil
		default:
			return err
		}
	}
}

// stateCtx is a context cancelled when the session state changes or stop
// is closed, for calls that must not outlive the state they were made in.
func stateCtx(changed <-chan struct{}, stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-changed:
		case <-stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx, cancel
}

// getW reads p's stat and sets a data watch on it if it exists. Unlike
// exists, it sets no watch on a missing node: a sequential name never
// comes back to fire one.
func getW(ctx context.Context, c *zk.Conn, p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	r := getWAll(ctx, c, p)[0]
	return r.found, r.st, r.ch, r.err
}

// nodeRead is a node's data and stat as a getData returned them, and the
// data watch set with it, if one was.
type nodeRead struct {
	data []byte
	st   *zk.Stat
	ch   <-chan zk.Event
}

// readNode reads p's data and stat, setting a data watch on p when watch
// is set.
func readNode(ctx context.Context, c *zk.Conn, p string, watch bool) (nodeRead, error) {
	return call(ctx, func() (nodeRead, error) {
		if watch {
			d, st, ch, err := c.GetW(p)
			return nodeRead{d, st, ch}, err
		}
		d, st, err := c.Get(p)
		return nodeRead{data: d, st: st}, err
	})
}

// nodeWatch is the reply to a getData that sets a watch: a node not
// there is found false, with no error and no watch.
type nodeWatch struct {
	found bool
	st    *zk.Stat
	ch    <-chan zk.Event
	err   error
}

// getWAll sends a getData with a watch for every path at once and waits
// for every reply: one round trip for all. A ctx that ends first fails
// every reply with its error (a watch the server sets meanwhile fires
// into a channel nobody reads).
func getWAll(ctx context.Context, c *zk.Conn, paths ...string) []nodeWatch {
	replies := make([]nodeWatch, len(paths))
	done := make(chan struct{}, len(paths))
	for i, p := range paths {
		go func() {
			defer func() { done <- struct{}{} }()
			_, st, ch, err := c.GetW(p)
			if !errors.Is(err, zk.ErrNoNode) {
				replies[i] = nodeWatch{found: err == nil, st: st, ch: ch, err: err}
			}
		}()
	}
	for range paths {
		select {
		case <-done:
		case <-ctx.Done():
			failed := make([]nodeWatch, len(paths))
			for i := range failed {
				failed[i].err = ctx.Err()
			}
			return failed
		}
	}
	return replies
}

// ownerOf reads whether p exists and the session that holds it (its
// ephemeralOwner: 0 for a node no session holds, or a missing one).
func ownerOf(ctx context.Context, c *zk.Conn, p string) (exists bool, session int64, err error) {
	type r struct {
		ok bool
		st *zk.Stat
	}
	res, err := call(ctx, func() (r, error) {
		ok, st, err := c.Exists(p)
		return r{ok, st}, err
	})
	if err != nil || !res.ok {
		return false, 0, err
	}
	return true, res.st.EphemeralOwner, nil
}

// clientHolds reports whether the node at p exists and is a client's: an
// ephemeral node a session holds, a Curator semaphore's leases parent,
// which no session holds (see curatorLeases), or a Kazoo NonBlockingLease
// whose lease has not run out (see kazooLeaseHolder).
func clientHolds(ctx context.Context, c *zk.Conn, p string) (exists, client bool, err error) {
	if path.Base(p) == kazooLeaseHolder {
		return leaseHeld(ctx, c, p)
	}
	exists, session, err := ownerOf(ctx, c, p)
	return exists, session != 0 || exists && path.Base(p) == curatorLeases, err
}

// leaseHeld is clientHolds for a Kazoo NonBlockingLease's node: held while
// the end its data names (the holder's clock, UTC, to the second) is not
// past, by ours, with leaseSlack to spare, or while a session holds the
// node. Data that is no such lease leaves the session's word alone. A
// node herald may not READ (Kazoo's client writes it with its default
// ACL, digest or SASL) has an end herald cannot know: it holds, as a
// running lease does, rather than failing every waiter's, guard's and
// observer's read of the group.
func leaseHeld(ctx context.Context, c *zk.Conn, p string) (exists, client bool, err error) {
	type r struct {
		data []byte
		st   *zk.Stat
	}
	res, err := call(ctx, func() (r, error) {
		data, st, err := c.Get(p)
		return r{data, st}, err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return false, false, nil
	case errors.Is(err, zk.ErrNoAuth):
		return true, true, nil
	case err != nil:
		return false, false, err
	}
	end, ok := kazooLeaseEnd(res.data)
	return true, res.st.EphemeralOwner != 0 || ok && time.Now().Before(end.Add(leaseSlack)), nil
}

// existsW reads p's stat and sets a watch that also fires when p is
// created: for a path that may come into being, such as a group's node.
func existsW(ctx context.Context, c *zk.Conn, p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	type r struct {
		ok bool
		st *zk.Stat
		ch <-chan zk.Event
	}
	res, err := call(ctx, func() (r, error) {
		ok, st, ch, err := c.ExistsW(p)
		return r{ok, st, ch}, err
	})
	return res.ok, res.st, res.ch, err
}
