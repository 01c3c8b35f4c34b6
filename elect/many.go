package elect

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// ObserveMany observes many groups at once, as Observe observes one, but
// with no goroutine of its own per group: watch events reach one shared
// dispatcher straight from the session (by path), and a bounded pool of
// workers reads the groups whose watches fired. A group costs its last
// view and a few hundred bytes of state, so one session can observe
// 100,000 groups; reads of many groups at once (the snapshots after a
// start or a reconnect) are pipelined on the connection, at most Workers
// at a time.
//
// Changes of every group arrive on one channel, each group's in order; the
// first change of each group is its Snapshot. Like Observe it says Unknown
// for every group while the connection is lost and a fresh Snapshot once
// it is back; a failed read of one group says Unknown for that group and is
// retried with backoff (OnGroupError hears of it). ObserveMany stops when
// ctx ends or the session is lost (Err says which).
func ObserveMany(ctx context.Context, s *Session, opts ...ManyOption) (*Many, error) {
	if s == nil {
		return nil, errors.New("elect: nil session")
	}
	mo := manyOptions{workers: 32, buffer: 1024, maxRetry: 30 * time.Second}
	for _, opt := range opts {
		if opt == nil {
			return nil, errNilOption
		}
		if err := opt(&mo); err != nil {
			return nil, err
		}
	}
	m := &Many{s: s, opts: mo, ch: make(chan Change, mo.buffer), done: make(chan struct{}), groups: map[string]*member{}}
	m.ctx, m.cancel = context.WithCancel(ctx)
	m.wake = sync.NewCond(&m.mu)
	stalls.acquire()
	m.unwatch = s.onWatch(m.onEvent)
	var wg sync.WaitGroup
	for range mo.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.work()
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		m.follow()
	}()
	if mo.resync > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.resyncLoop()
		}()
	}
	go func() {
		wg.Wait()
		close(m.ch)
		close(m.done)
	}()
	return m, nil
}

// ManyOption configures ObserveMany.
type ManyOption func(*manyOptions) error

type manyOptions struct {
	workers  int
	buffer   int
	maxRetry time.Duration
	onError  func(group string, err error, retryIn time.Duration)
	resync   time.Duration
	// resyncRate and resyncFloor: see ResyncSooner.
	resyncRate  int
	resyncFloor time.Duration
}

// Workers bounds how many groups are read at once (default 32).
func Workers(n int) ManyOption {
	return func(o *manyOptions) error {
		if n < 1 {
			return fmt.Errorf("elect: %d workers: want at least 1", n)
		}
		o.workers = n
		return nil
	}
}

// ManyBuffer sets the changes channel's buffer (default 1024). Nothing is
// ever dropped: a full buffer makes the workers wait.
func ManyBuffer(n int) ManyOption {
	return func(o *manyOptions) error {
		if n < 0 {
			return fmt.Errorf("elect: negative buffer %d", n)
		}
		o.buffer = n
		return nil
	}
}

// OnGroupError is called when a group's read fails for a reason other than
// the connection (the group then reads Unknown and is retried in retryIn,
// backing off up to maxRetry).
func OnGroupError(maxRetry time.Duration, fn func(group string, err error, retryIn time.Duration)) ManyOption {
	return func(o *manyOptions) error {
		if maxRetry > 0 {
			o.maxRetry = maxRetry
		}
		o.onError = fn
		return nil
	}
}

// ResyncSooner has Resync check every group more often than once per its
// interval where that costs ZooKeeper little: a round of checks lasts as
// long as the groups take at perSecond checks a second, but no less than
// floor, and no more than Resync's interval. The check is what finds a
// group whose READ was taken away, of which ZooKeeper reports nothing: a
// bridge with a few groups learned of it up to Resync's whole interval
// (5 minutes) late, and went on confirming the owner it last heard.
func ResyncSooner(perSecond int, floor time.Duration) ManyOption {
	return func(o *manyOptions) error {
		if perSecond < 1 || floor <= 0 {
			return fmt.Errorf("elect: resync sooner at %d checks a second, every %v at the most: want both above 0", perSecond, floor)
		}
		o.resyncRate, o.resyncFloor = perSecond, floor
		return nil
	}
}

// Resync checks every group once per d (spread evenly over d) with one
// read that sets no watch, and reads it in full when that shows a change
// no watch reported. ZooKeeper sends a watch event only to a session that
// may read the node: after someone takes READ away from the observer's
// identity, a group's changes are never reported, and the watch is spent
// even once READ is given back. The check finds both: a group it may not
// read says Unknown (and OnGroupError hears why) until it can again, and
// one that changed unreported reads a fresh state. 0, the default, checks
// nothing.
func Resync(d time.Duration) ManyOption {
	return func(o *manyOptions) error {
		if d < 0 {
			return fmt.Errorf("elect: negative resync interval %v", d)
		}
		o.resync = d
		return nil
	}
}

// Many observes a set of groups; see ObserveMany.
type Many struct {
	s       *Session
	opts    manyOptions
	ctx     context.Context
	cancel  context.CancelFunc
	ch      chan Change
	unwatch func()
	done    chan struct{}

	mu     sync.Mutex
	wake   *sync.Cond
	groups map[string]*member
	// parents are the single-node leaders by their parent's path, whose
	// deletion they watch while no leader node stands (singleWatch).
	parents map[string][]*member
	sent    atomic.Uint64 // changes put on ch (Sent)
	queue   []*member     // groups to read, oldest first, from head
	head    int
	err     error
	ended   bool
}

// member is one group of a Many, or one single-node leader (single not
// nil). ob and single are the worker's alone while busy; the rest is
// guarded by Many.mu.
//
// There is one for every group observed, so its small fields sit
// together, where they cost no padding.
type member struct {
	ob     observation
	single *singleState
	// turns counts the worker turns the member has had (Settle).
	turns  uint64
	fired  fired
	last   *View
	leader *SingleView // a single-node leader's last
	retry  *time.Timer
	fails  uint16 // saturates (see readFailed)
	// restate: the next read is sent as a Snapshot, with Gap (Restate)
	// or without a Gap of its own (Refresh).
	restate                      restateKind
	queued, busy, again, removed bool
	// heard: an event on the group's path (a single-node leader's node)
	// came since the start of its last read (see parentGoneUnseen), and
	// whether the first was the group's deletion (see deletedUnseen). One
	// byte with fails' two: the member fits its size class of 448 bytes.
	heard heardKind
}

// heardKind is what a member heard on its path since its last read began.
type heardKind uint8

const (
	heardNothing   heardKind = iota
	heardChange              // an event, the first not the group's deletion
	heardGoneFirst           // an event, the first the group's deletion
)

// fired is what the group's watches said since a worker last took it;
// resync is Resync's turn.
type fired struct {
	// after is when the newest request answered before the first of
	// these events was sent, in unix ns (see unixNs): what they tell
	// happened after it.
	after int64
	// open is Session.openConn as the first of them came (see
	// lateMark.firedOpen).
	open                     uint64
	children, office, resync bool
	// behind: one of them came while the session's member was behind
	// the ZooKeeper leader (see lateMark.behind).
	behind bool
}

// Add starts observing group; its first change is a Snapshot (measured
// against Since or AfterOwner when given). Observing a group twice is an
// error.
func (m *Many) Add(group string, opts ...ObserveOption) error {
	if err := ValidatePath(group); err != nil {
		return err
	}
	oo := observeOptions{}
	for _, opt := range opts {
		if opt == nil {
			return errNilOption
		}
		if err := opt(&oo); err != nil {
			return err
		}
	}
	if r, ok := oo.rules.For(group); ok && oo.recipe == "" {
		oo.recipe = r
	}
	if oo.since == nil && oo.after != nil {
		oo.since = oo.after
		oo.since.Group = group
	}
	g := &member{ob: observation{s: m.s, r: reader{conn: m.s.Conn(), group: group, recipe: oo.recipe, hint: hintOf(oo.since), ownerBefore: hadOwner(oo.since), noOwnerWatch: true}, before: oo.since}}
	g.ob.r.listed = func() { m.forgetHeard(g) }
	g.ob.r.sawMissing, g.ob.r.missingUp = missingAt(oo.since)
	return m.join(g)
}

// join registers g under its path and queues its first read; a path
// observed already is refused.
func (m *Many) join(g *member) error {
	path := g.ob.r.group
	g.ob.childrenFired = true
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended {
		return fmt.Errorf("elect: observe %s: %w", path, m.endErr())
	}
	if _, ok := m.groups[path]; ok {
		return fmt.Errorf("elect: %s is observed already", path)
	}
	m.groups[path] = g
	if g.single != nil {
		if m.parents == nil {
			m.parents = map[string][]*member{}
		}
		m.parents[g.single.r.parent] = append(m.parents[g.single.r.parent], g)
	}
	m.enqueue(g)
	return nil
}

// AddSingle starts observing the single-node leader at p as ObserveSingle
// does (its first change is a Snapshot; Since and AfterOwner apply), but
// by turns on Many's workers, with no goroutine of its own: the watch on
// the node reaches Many's dispatcher by its path. p and the groups share
// one namespace: observing a path twice is an error.
func (m *Many) AddSingle(p string, sn SingleNode, opts ...ObserveOption) error {
	st, _, err := newSingleState(m.s, p, sn, opts)
	if err != nil {
		return err
	}
	g := &member{single: &st}
	g.ob.r.group = p // the path the member is known by; st reads it
	return m.join(g)
}

// Remove stops observing group (nothing more is sent for it once Remove
// returns, apart from a change a worker is sending at that moment).
func (m *Many) Remove(group string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.groups[group]
	if !ok {
		return
	}
	delete(m.groups, group)
	if g.single != nil {
		m.parents[g.single.r.parent] = slices.DeleteFunc(m.parents[g.single.r.parent], func(x *member) bool { return x == g })
	}
	g.removed = true
	if g.retry != nil {
		g.retry.Stop()
	}
}

// Restate reads group afresh and sends its state as a Snapshot with Gap
// set, after whatever was sent for it before: for a reader that missed
// some of its changes (a standby bridge that dropped what it held) and
// must be told the current state, and that an owner may have come and
// gone unseen. A group not observed is ignored.
func (m *Many) Restate(group string) { m.askRestate(group, restateGap) }

// Refresh reads group afresh and sends its state as a Snapshot, after
// whatever was sent for it before, as Restate does but without a Gap of
// its own: for a reader that missed some of the group's changes which
// reached their readers by another way (a standby bridge whose held
// events outlived its replay window, the active bridge having stored
// them), and whose own state of the group must be brought up to date. The
// snapshot says Gap only when the read itself finds one. A group not
// observed is ignored; Restate wins over Refresh until the read.
func (m *Many) Refresh(group string) { m.askRestate(group, restateFresh) }

func (m *Many) askRestate(group string, k restateKind) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if g := m.groups[group]; g != nil {
		g.restate = max(g.restate, k)
		g.fired.children = true
		m.enqueue(g)
	}
}

// Len is the number of groups observed.
func (m *Many) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.groups)
}

// Last is the latest view a group's changes were sent for (false before
// its first). Give it to Since when observing the group again.
func (m *Many) Last(group string) (View, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.groups[group]
	if !ok || g.last == nil {
		return View{}, false
	}
	return *g.last, true
}

// Leader is what SingleObserver.Leader is for a single-node leader added
// with AddSingle: the latest view its changes were sent for, with the
// owner's decoded identity and the epoch (false before its first, and for
// paths not added with AddSingle).
func (m *Many) Leader(p string) (SingleView, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.groups[p]
	if !ok || g.leader == nil {
		return SingleView{}, false
	}
	return *g.leader, true
}

// Lasts is Last for every group that has a view.
func (m *Many) Lasts() map[string]View {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]View, len(m.groups))
	for name, g := range m.groups {
		if g.last != nil {
			out[name] = *g.last
		}
	}
	return out
}

// Changes is closed when Many stops; Err says why.
func (m *Many) Changes() <-chan Change { return m.ch }

// Done is closed once Many has stopped.
func (m *Many) Done() <-chan struct{} { return m.done }

// Err is nil while running, ctx.Err() after cancel, ErrSessionLost when the
// session expired (observe again on a new session).
func (m *Many) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

func (m *Many) endErr() error {
	if m.err != nil {
		return m.err
	}
	return ErrSessionClosed
}

// finish stops every worker; the first reason given is kept.
func (m *Many) finish(err error) {
	m.mu.Lock()
	first := !m.ended
	if first {
		m.ended, m.err = true, err
		m.wake.Broadcast()
	}
	m.mu.Unlock()
	m.cancel()
	m.unwatch()
	if first {
		stalls.release()
	}
}

// follow reads every group again on each change of the connection's state
// (each says Unknown while it is lost, and reads a fresh Snapshot once it
// is back), and stops Many when the session or ctx ends.
func (m *Many) follow() {
	for {
		st, changed := m.s.State()
		if st == StateLost || st == StateClosed {
			m.finish(m.s.Err())
			return
		}
		m.mu.Lock()
		for _, g := range m.groups {
			m.enqueue(g)
		}
		m.mu.Unlock()
		select {
		case <-changed:
		case <-m.ctx.Done():
			m.finish(m.ctx.Err())
			return
		}
	}
}

// onEvent takes a watch event from the session's receive loop and queues
// the group it concerns: an event on a group's path is about its children
// (or its creation or deletion), one on its office node about the office.
// The owner is read without a watch of its own: its going fires the
// children watch. It never blocks.
func (m *Many) onEvent(ev zk.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// A data change of a group node is herald's release mark, which the
	// children watch already covers; of a single-node leader, a new term.
	if g := m.groups[ev.Path]; g != nil && (ev.Type != zk.EventNodeDataChanged || g.single != nil) {
		g.fired.children = true
		switch {
		case g.heard != heardNothing:
		case ev.Type == zk.EventNodeDeleted:
			g.heard = heardGoneFirst
		default:
			g.heard = heardChange
		}
		m.firedAt(g)
	}
	if ev.Type == zk.EventNodeDeleted {
		// A single-node leader's parent gone (see singleWatch).
		for _, g := range m.parents[ev.Path] {
			g.fired.children = true
			m.firedAt(g)
		}
	}
	if parent, ok := strings.CutSuffix(ev.Path, "/"+OfficeNode); ok {
		if g := m.groups[parent]; g != nil {
			g.fired.office = true
			m.firedAt(g)
		}
	}
}

// firedAt notes when what fired for g happened after (see fired.after),
// and queues g. It runs on the client's receive loop, in the order of the
// reply stream, so what the session vouches for is as of the newest
// answer before the event. m.mu must be held.
func (m *Many) firedAt(g *member) {
	if g.fired.after == 0 {
		g.fired.after = unixNs(m.s.vouchedAsOf()) // see lateMark.noteFired
	}
	g.fired.behind = g.fired.behind || m.s.leaderBehind()
	if g.fired.open == 0 {
		g.fired.open = max(m.s.openConn(), 1)
	}
	m.enqueue(g)
}

// heardFired takes what f says of when its events happened (see
// fired.after and fired.behind) into the observation's late mark.
func (m *lateMark) heardFired(f fired) {
	m.heard(f.after)
	if f.open != 0 {
		m.heardOpen(f.open)
	}
	if f.behind {
		m.behind.Store(true)
	}
}

// firedSince reports whether a watch of g fired since its turn began.
func (m *Many) firedSince(g *member) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return g.fired.children || g.fired.office
}

// enqueue queues g to be read, once; a group being read is read again
// after. m.mu must be held.
func (m *Many) enqueue(g *member) {
	switch {
	case g.removed || m.ended:
	case g.busy:
		g.again = true
	case !g.queued:
		g.queued = true
		m.queue = append(m.queue, g)
		m.wake.Signal()
	}
}

// next waits for a group to read and takes it with what fired; nil when
// Many has stopped.
func (m *Many) next() (*member, fired) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		if m.ended {
			return nil, fired{}
		}
		if m.head < len(m.queue) {
			g := m.queue[m.head]
			m.queue[m.head] = nil
			m.head++
			if m.head == len(m.queue) {
				m.queue, m.head = m.queue[:0], 0
			} else if m.head > 1024 && m.head*2 > len(m.queue) {
				m.queue, m.head = append(m.queue[:0], m.queue[m.head:]...), 0
			}
			g.queued = false
			if g.removed {
				continue
			}
			g.busy = true
			f := g.fired
			g.fired = fired{}
			return g, f
		}
		m.wake.Wait()
	}
}

// done hands g back after a worker's turn, queueing it again if anything
// fired meanwhile.
func (m *Many) release(g *member) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g.busy = false
	g.turns++
	if g.again {
		g.again = false
		m.enqueue(g)
	}
}

func (m *Many) work() {
	for {
		g, f := m.next()
		if g == nil {
			return
		}
		m.serve(g, f)
		m.release(g)
	}
}

// serve is one turn of a group: what step, suspended and await do for an
// Observer, taken one at a time.
func (m *Many) serve(g *member, f fired) {
	if g.single != nil {
		m.serveSingle(g, f)
		return
	}
	ob := &g.ob
	if f.children {
		ob.childrenFired, ob.childW, ob.existsW = true, nil, nil
	}
	if f.office {
		ob.officeW, ob.officeFired = nil, true
	}
	ob.unread = ob.unread || f.children || f.office
	ob.heardFired(f)
	st, changed := m.s.State()
	switch st {
	case StateLost, StateClosed:
		m.finish(m.s.Err())
		return
	case StateConnecting, StateSuspended:
		if ob.prev != nil {
			held := vouched(m.s, ob.unread, func() bool { return m.firedSince(g) })
			if !m.emit([]Change{ob.unknown()}) {
				return
			}
			ob.unseen(held)
			m.mu.Lock()
			g.last = ob.before // Last: for an observation on a new session (Since)
			m.mu.Unlock()
		}
		ob.childrenFired = true
		return // read again once connected (follow queues every group)
	}
	if !ob.childrenFired && !ob.officeFired {
		if !f.resync || !m.recheck(g, changed) {
			return
		}
		ob.childrenFired = true
	}
	restate := m.takeRestate(g)
	ob.reading(m.s)
	heard, gone := m.takeNodeHeard(g)
	v, err := ob.read(m.ctx, changed)
	if err != nil {
		m.keepRestate(g, restate)
		m.keepNodeHeard(g, heard, gone)
		m.readFailed(g, err)
		return
	}
	v.goneQuiet = heard && gone && !v.Exists
	ob.childrenFired, ob.officeFired, ob.unread = false, false, false
	changes := diff(ob.prev, v)
	if ob.prev == nil && ob.before != nil {
		changes, ob.before = []Change{snapshotAfter(ob.before, v)}, nil
	}
	if restate != restateNone {
		changes = restated(changes, diff(nil, v)[0], restate == restateGap)
	}
	ob.late(changes)
	if !m.emit(changes) {
		return
	}
	ob.prev = &v
	m.mu.Lock()
	g.last, g.fails = &v, 0
	m.mu.Unlock()
}

// serveSingle is one turn of a single-node leader: what
// singleObservation's step and suspended do, taken one at a time. Its
// node's watch is set by the read and reaches onEvent.
func (m *Many) serveSingle(g *member, f fired) {
	ob, st := &g.ob, g.single
	if f.children {
		ob.childrenFired, ob.unread = true, true
	}
	ob.heardFired(f)
	state, changed := m.s.State()
	switch state {
	case StateLost, StateClosed:
		m.finish(m.s.Err())
		return
	case StateConnecting, StateSuspended:
		held := vouched(m.s, ob.unread, func() bool { return m.firedSince(g) })
		c, ok := st.unseen(held)
		if ok {
			m.mu.Lock()
			g.last = &st.before.view // Last: for an observation on a new session (Since)
			m.mu.Unlock()
		}
		if ok && !m.emit([]Change{c}) {
			return
		}
		ob.childrenFired = true
		return // read again once connected (follow queues every group)
	}
	if !ob.childrenFired && (!f.resync || !m.recheck(g, changed)) {
		return
	}
	restate := m.takeRestate(g)
	cctx, cancel := stateCtx(changed, m.ctx.Done())
	ob.reading(m.s)
	heard, gone := m.takeNodeHeard(g)
	sv, _, err := st.r.read(cctx, true)
	cancel()
	st.readAt = time.Now() // answered (see observation.read)
	if err != nil {
		m.keepRestate(g, restate)
		m.keepNodeHeard(g, heard, gone)
		m.readFailed(g, err)
		return
	}
	// The node's watch the last read set: no event on the node since
	// that read began, up to this read's answer, which follows every
	// event before it (see parentGoneUnseen).
	m.mu.Lock()
	sv.nodeQuiet = st.prev != nil && !heard && g.heard == heardNothing
	m.mu.Unlock()
	ob.childrenFired, ob.unread = false, false
	changes := st.changes(sv)
	if restate != restateNone {
		changes = restated(changes, singleSnapshot(sv), restate == restateGap)
	}
	ob.late(changes)
	// The leader is stored before its change is sent, so that a reader
	// of the change finds Leader saying the same (as Observer does).
	st.prev = &sv
	v := sv.view()
	m.mu.Lock()
	g.last, g.leader, g.fails = &v, &sv, 0
	m.mu.Unlock()
	m.emit(changes)
}

// takeNodeHeard reports whether an event on g's path came since the
// start of its last read, and whether the first was its deletion, and
// starts counting again for this one.
func (m *Many) takeNodeHeard(g *member) (heard, goneFirst bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	heard, goneFirst = g.heard != heardNothing, g.heard == heardGoneFirst
	g.heard = heardNothing
	return heard, goneFirst
}

// forgetHeard drops what was heard on g's path before its listing came
// back with a children watch: an older watch's event (the group's old
// node deleted, reaching us during a read of the new one) proved nothing
// of the new node, yet was taken for its watch firing first for its
// deletion, and an owner that came and went in the new node, deleted
// with it, passed without a gap mark (see deletedUnseen). What it told
// the listing shows.
func (m *Many) forgetHeard(g *member) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g.heard = heardNothing
}

// keepNodeHeard keeps, for the read after one that failed, what was
// heard of g's path before it.
func (m *Many) keepNodeHeard(g *member, heard, goneFirst bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case heard && goneFirst:
		g.heard = heardGoneFirst
	case heard:
		g.heard = heardChange
	}
}

// readFailed: a lost connection is followed by follow; an expired session
// stops Many; any other error makes the group Unknown until a retry.
func (m *Many) readFailed(g *member, err error) {
	ob := &g.ob
	ob.childrenFired = true
	switch {
	case m.ctx.Err() != nil:
		return
	case expired(err):
		m.finish(ErrSessionLost)
		return
	case connLoss(err) || errors.Is(err, context.Canceled):
		m.retryIn(g, 200*time.Millisecond, nil)
		return
	}
	switch {
	case g.single != nil:
		if c, ok := g.single.unseen(time.Time{}); ok && !m.emit([]Change{c}) {
			return
		}
	case ob.prev != nil:
		if !m.emit([]Change{ob.unknown()}) {
			return
		}
		ob.unseen(time.Time{}) // the connection is up: the read itself failed
	}
	m.mu.Lock()
	if g.fails < math.MaxUint16 {
		g.fails++
	}
	n := int(g.fails)
	m.mu.Unlock()
	wait := 200 * time.Millisecond
	for i := 1; i < n && wait < m.opts.maxRetry; i++ {
		wait *= 2
	}
	wait = min(wait, m.opts.maxRetry)
	m.retryIn(g, wait, observeErr(ob.r.group, err))
}

// retryIn queues g again after wait, telling OnGroupError about err.
func (m *Many) retryIn(g *member, wait time.Duration, err error) {
	if err != nil && m.opts.onError != nil {
		m.opts.onError(g.ob.r.group, err, wait)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if g.removed || m.ended {
		return
	}
	if g.retry != nil {
		g.retry.Stop()
	}
	g.retry = time.AfterFunc(wait, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		g.fired.children = true
		m.enqueue(g)
	})
}

// emit sends changes in order, waiting for the reader; false once Many
// stops.
func (m *Many) emit(cs []Change) bool {
	for _, c := range cs {
		select {
		case m.ch <- c:
			m.sent.Add(1)
		case <-m.ctx.Done():
			return false
		}
	}
	return true
}
