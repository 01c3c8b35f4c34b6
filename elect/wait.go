package elect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// A waiter goes through these states until it owns:
//
//   - guessing (only in a rotation, see rotation.go): set data watches on
//     the nodes that should sit just below ours and two below, without
//     listing. Both there: watching. Either missing: listing.
//   - listing: read the children; if our node is the lowest, we own. If the
//     group's foreign clients need another dialect than our node's name,
//     replace our node first (they could not order it). Otherwise note the
//     node just below ours, whether it was the only lower one, and when it
//     was not, the node two below.
//   - watching: keep a data watch on the node just below ours and, in a
//     queue deeper than two, on the node two below, and wait for one to
//     go. The node just below gone: owning when it was the only lower node
//     at the last listing, else listing. The node two below gone: listing,
//     while the node just below most likely owns; when that listing shows
//     it alone below us, its deletion is proof, and our turn comes with
//     its release, no round trip after.
//   - owning: reached only from proof, never from a guess or a data change:
//     the listing showed nothing below us, or the node below us is gone
//     (NodeDeleted, or the read that would set the watch answered NoNode)
//     and it was the only lower node at the last listing, and the watch
//     on our own node was set on the connection that told us so, which
//     would have told us first of our node's deletion. Sequence numbers
//     only grow, so no lower node can appear after a listing. The node two
//     below never gives proof: its deletion only makes us list, and so
//     does the deletion below us heard on a later connection than our own
//     watch was set on.
//
// A data change on a watched node is not a release: nothing herald does
// writes a queue node, so it is someone else's write (an operator's set,
// Curator's Revoker), and the waiter only sets that watch again.
//
// While watching, the waiter also looks at the watched nodes without a
// watch every recheckEvery: ZooKeeper sends a watch event only to a session
// that may READ the node, so a node whose ACL comes to refuse us READ would
// go unheard, and we would wait forever.
type waiter struct {
	q       *queue
	t       ticket
	data    []byte
	tryOnly bool
	// pre is the listing sent right behind our create, for the first
	// listing (nil when none was).
	pre <-chan listed
	// below is the node just below ours; onlyLower says it was the only
	// lower node at the last listing. twoBelow is the node below that one
	// (none when below was the only lower node). A guessed node (see
	// rotation) is never onlyLower: its deletion sends us back to listing.
	below, twoBelow watched
	onlyLower       bool
	// own is the watch on our own node, set with the first watch on a node
	// below it: should someone delete our node while we wait, its event
	// comes before that of any later deletion below (one reply stream, in
	// zxid order), and we must not own on the strength of the latter. The
	// handle keeps it as its own watch. That order holds on one
	// connection only (see Session.connection): ownConn is the connection
	// that answered the request setting the watch, 0 when the requests that
	// went with it were not all answered on that one.
	own     <-chan zk.Event
	ownConn uint64
	// seenTwo is the last node two below ours this wait learned of, for
	// the next wait's guess.
	seenTwo entry
	// moves counts the nodes replaced for a dialect in this wait.
	moves int
	// listed is the group node's data version at the last listing, and
	// listedOK that the listing placed our node behind the group's counter.
	listed   int32
	listedOK bool
	// unreadable: a recheck found the node below ours unreadable (warned
	// once per wait).
	unreadable bool
	// seenSession is the owner whose session node this wait looked for
	// (see seeSessionNode).
	seenSession string
	// kids is the watch on the group's children of a waiter that keeps
	// its saved listing fresh (see watchListing), nil while none is set.
	kids <-chan zk.Event
	// recheckAt is when the watching waiter next looks at its nodes
	// without a watch (zero: not set): kept across the changes it
	// hears, which would otherwise put the look off for as long as they
	// keep coming.
	recheckAt time.Time
}

// recheckEvery is how often a watching waiter looks at its nodes without a
// watch, in nanoseconds (atomic, so that tests can shorten it).
var recheckEvery atomic.Int64

func init() { recheckEvery.Store(int64(30 * time.Second)) }

// watched is a node we wait on and our watch on it: nil while none is
// set (not yet, or it fired with a data change). A watch is tied to its
// node's name: a listing keeps it only for the node it was set on.
type watched struct {
	entry
	ch <-chan zk.Event
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
func (q *queue) wait(ctx context.Context, t ticket, data []byte, tryOnly bool, pre <-chan listed) (ticket, error) {
	w := &waiter{q: q, t: t, data: data, tryOnly: tryOnly, pre: pre}
	state := stateListing
	if !tryOnly {
		state = w.guessing(ctx)
	}
	for {
		var err error
		switch state {
		case stateListing:
			state, err = w.listing(ctx)
		case stateWatching:
			state, err = w.watching(ctx)
		case stateOwning:
			if st, _ := w.q.s.State(); st == StateSuspended || !w.q.s.heardLately() {
				// A stall, or a member that no longer answers for the
				// leader (its connection, still up, is being closed):
				// what proved it may predate our session's expiry. A
				// listing, sent now, proves it again or fails.
				state = stateListing
				continue
			}
			if err := w.q.s.gone(); err != nil {
				return w.t, err // the proof may be from before the session ended
			}
			if err := w.ownKept(); err != nil {
				return w.t, err
			}
			q.remember(w.t, w.below.entry, w.seenTwo)
			w.t.ownW = w.own
			return w.t, nil
		}
		if err != nil {
			return w.t, err
		}
	}
}

// listing reads the queue and decides: own, replace our node, or watch the
// nodes below ours.
func (w *waiter) listing(ctx context.Context) (waitState, error) {
	es, children, version, next, at, err := w.list(ctx)
	if err != nil {
		return stateListing, w.q.retryable(ctx, err)
	}
	idx := slices.IndexFunc(es, func(e entry) bool { return e.name == w.t.name })
	w.listed, w.listedOK = version, false
	if idx >= 0 {
		w.t.aboveGone, w.listedOK = goneAbove(es[idx+1:], w.t.seq, next)
	}
	if idx < 0 {
		if err := w.q.s.gone(); err != nil {
			return stateListing, err
		}
		return stateListing, fmt.Errorf("%w: %s", ErrNodeDeleted, w.q.full(w.t.name))
	}
	if moved, err := w.fitDialect(ctx, children); err != nil || moved {
		return stateListing, err
	}
	if relist, err := w.wrapRefused(ctx, es); err != nil || relist {
		return stateListing, err
	}
	if idx == 0 {
		// Every earlier owner's release, and its mark, came before this
		// listing, and nobody else writes the mark but a waiter after ours
		// that gave up, whose node the listing then misses: our release
		// names it (aboveGone).
		w.t.markVersion, w.t.markKnown = version, w.listedOK
		w.t.noneGone = w.listedOK && next == int32(len(children))
		return stateOwning, nil
	}
	if w.tryOnly {
		return stateListing, ErrLocked
	}
	w.notePrev(es[:idx], at)
	w.t.prevListing = groupListing{children: children, next: next}
	w.seeSessionNode(ctx)
	w.learnTimeouts(ctx, es[:idx])
	w.behind(es[:idx])
	return stateWatching, nil
}

// list reads the queue, and when its reply came (the listing's state held
// before that): the listing sent behind our create, if it shows our node
// (the server answered it after the create, as it would a listing sent
// now), else a new one.
func (w *waiter) list(ctx context.Context) (es []entry, children []string, version, next int32, at time.Time, err error) {
	if pre := w.pre; pre != nil {
		w.pre = nil
		select {
		case l := <-pre:
			if l.err == nil && contains(l.children, w.t.name) {
				w.q.noteGroup(l.st)
				es, next := parseListing(l.children, l.st.Cversion)
				return es, l.children, l.st.Version, next, l.at, nil
			}
		case <-ctx.Done():
			return nil, nil, 0, 0, time.Time{}, ctx.Err()
		}
	}
	es, children, version, next, err = w.q.list(ctx)
	return es, children, version, next, time.Now(), err
}

// notePrev notes, from a listing made at that showed lower nodes below
// ours (lowest first), the last node that can own before ours: the one
// just below. Should they all go before our next listing, any of them may
// have owned in turn, and a release or proof about the lowest (the owner
// this listing shows) says nothing about the ones after it; the one just
// below owns last if it owns at all. When it is the only lower node, this
// listing also shows every owner before it gone.
func (w *waiter) notePrev(lower []entry, at time.Time) {
	if p := lower[len(lower)-1].name; p != w.t.prev {
		w.t.prev, w.t.prevLowest = p, time.Time{}
	}
	if len(lower) == 1 && w.t.prevLowest.IsZero() {
		w.t.prevLowest = at
	}
}

// behind notes what a listing showed below our node (lower, lowest
// first): the node just below, and the one two below when there is one.
// A watch already set on either node is kept; any other is dropped, and
// its event, should it come, is never read.
func (w *waiter) behind(lower []entry) {
	n := len(lower)
	below, twoBelow := w.kept(lower[n-1]), watched{}
	if n >= 2 {
		twoBelow = w.kept(lower[n-2])
		w.seenTwo = lower[n-2]
	}
	w.below, w.twoBelow, w.onlyLower = below, twoBelow, n == 1
}

// kept is e with the watch we already hold on it, if any. A watch that
// has not fired on a node the listing still shows will fire on its
// deletion, which comes after the listing.
func (w *waiter) kept(e entry) watched {
	for _, x := range [2]watched{w.below, w.twoBelow} {
		if x.ch != nil && x.name == e.name {
			return watched{entry: e, ch: x.ch}
		}
	}
	return watched{entry: e}
}

// watching waits for the node just below ours, or the one two below, to
// go.
func (w *waiter) watching(ctx context.Context) (waitState, error) {
	if state, armed, err := w.arm(ctx); !armed {
		return state, err
	}
	w.q.prefetchMark() // off the handoff's path: see groupMark
	w.watchListing(ctx)
	if w.recheckAt.IsZero() {
		w.recheckAt = time.Now().Add(time.Duration(recheckEvery.Load()))
	}
	recheck := time.NewTimer(time.Until(w.recheckAt))
	defer recheck.Stop()
	select {
	case ev := <-w.own:
		w.own = nil
		return w.ownFired(ev)
	case ev := <-w.below.ch:
		w.below.ch = nil
		return w.fired(ev, w.belowGone)
	case ev := <-w.twoBelow.ch: // nil, so never ready, when there is none
		w.twoBelow.ch = nil
		return w.fired(ev, twoBelowGone)
	case <-w.kids:
		w.kids = nil
		return w.childrenChanged()
	case <-recheck.C:
		w.recheckAt = time.Time{}
		return w.recheck(ctx)
	case <-ctx.Done():
		return stateListing, ctx.Err()
	case <-w.q.s.Done():
		return stateListing, w.q.s.Err()
	}
}

// childrenChanged reads a change of the group's children heard by a
// waiter that keeps its listing fresh: the owner's node gone (its
// deletion's event comes first, and is taken first, not a listing
// later), else a listing again (see watchListing).
func (w *waiter) childrenChanged() (waitState, error) {
	select {
	case ev := <-w.below.ch:
		w.below.ch = nil
		return w.fired(ev, w.belowGone)
	default:
		return stateWatching, nil
	}
}

// arm sets the watches not set yet (see watchAll). A node found gone
// moves the waiter on as its deletion would; armed is then false.
func (w *waiter) arm(ctx context.Context) (state waitState, armed bool, err error) {
	below, twoBelow, ok, err := w.watchAll(ctx)
	switch {
	case !ok:
		return stateListing, false, err
	case !below:
		return w.belowGone(), false, nil
	case !twoBelow:
		return twoBelowGone(), false, nil
	}
	return stateWatching, true, nil
}

// watchAll sets the watches the waiter lacks: on our own node (learning
// our term from its stat), and on the nodes below and twoBelow name where
// they hold none. The requests go out together and cost one round trip,
// not one each, which counts where the servers are a network away. The
// order they reach the server in does not matter: it answers one
// session's requests in order and sends a watch's event before the reply
// to any request it handles after the change, so once every reply is in,
// our node's deletion is known (its reply says NoNode, or its watch's
// event waits in its channel, which ownKept reads) before we act on what
// the other replies say.
//
// ok is false when a reply failed (err is what retryable made of it: nil
// once a lost connection is back, and the waiter lists again) or our node
// is gone (err says so). Otherwise below and twoBelow say whether those
// nodes are there (true for one not asked about); the watches on the ones
// there are kept in w.
func (w *waiter) watchAll(ctx context.Context) (below, twoBelow, ok bool, err error) {
	var paths []string
	conn := w.q.s.connection()
	own := w.own == nil
	if own {
		paths = append(paths, w.q.full(w.t.name))
	}
	var asked []*watched
	for _, x := range [2]*watched{&w.below, &w.twoBelow} {
		if x.name != "" && x.ch == nil {
			asked = append(asked, x)
			paths = append(paths, w.q.full(x.name))
		}
	}
	if len(paths) == 0 {
		return true, true, true, nil
	}
	replies := getWAll(ctx, w.q.s.Conn(), paths...)
	if own {
		if err := w.ownWatched(replies[0]); err != nil {
			return false, false, false, w.q.retryable(ctx, err)
		}
		w.ownConn = 0
		if w.q.s.connection() == conn {
			w.ownConn = conn // every reply came on the connection they were sent on
		}
		replies = replies[1:]
	}
	below, twoBelow = true, true
	for i, x := range asked {
		found, ch, err := w.q.nodeWatched(x.name, replies[i])
		if err != nil {
			return false, false, false, w.q.retryable(ctx, err)
		}
		x.ch = ch
		switch {
		case found:
		case x == &w.below:
			below = false
		default:
			twoBelow = false
		}
	}
	return below, twoBelow, true, nil
}

// recheck reads the watched nodes without a watch: one found gone moves
// the waiter on as its deletion would (a read answering NoNode is proof);
// one we may not read any more is there, and ZooKeeper will not tell us
// when it goes, so only these rechecks will.
func (w *waiter) recheck(ctx context.Context) (waitState, error) {
	for _, x := range [2]struct {
		name string
		gone func() waitState
	}{{w.below.name, w.belowGone}, {w.twoBelow.name, twoBelowGone}} {
		if x.name == "" {
			continue
		}
		_, err := call(ctx, func() (struct{}, error) {
			_, _, err := w.q.s.Conn().Get(w.q.full(x.name))
			return struct{}{}, err
		})
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return x.gone(), nil
		case errors.Is(err, zk.ErrNoAuth):
			if !w.unreadable {
				w.unreadable = true
				w.q.s.log.Warn("may no longer read the node ours waits behind: ZooKeeper will not say when it goes, so we look every "+time.Duration(recheckEvery.Load()).String()+"; grant READ to every participant in the nodes' ACL",
					"group", w.q.parent, "node", x.name)
			}
		case err != nil:
			return stateWatching, w.q.retryable(ctx, err)
		}
	}
	return stateWatching, nil
}

// fired reads an event on a watched node; gone says where its deletion
// leads.
func (w *waiter) fired(ev zk.Event, gone func() waitState) (waitState, error) {
	switch {
	case ev.Type == zk.EventNodeDeleted:
		return gone(), nil
	case ev.Err != nil && expired(ev.Err):
		return stateListing, ErrSessionLost
	case ev.Type == zk.EventNotWatching:
		w.below.ch, w.twoBelow.ch = nil, nil
		if err := w.q.s.gone(); err != nil {
			return stateListing, err
		}
		return stateListing, nil
	}
	// NodeDataChanged: someone wrote the node. Watch it again.
	return stateWatching, nil
}

// ownWatched takes the reply that set the watch on our own node, first of
// a wait's watches, and learns our term from its stat.
func (w *waiter) ownWatched(r nodeWatch) error {
	switch {
	case r.err != nil:
		return r.err
	case !r.found:
		return w.ownDeleted()
	}
	w.own = r.ch
	if w.t.czxid == 0 {
		w.t.czxid = r.st.Czxid
	}
	return nil
}

// ownFired reads an event on our own node: its deletion ends the wait
// (as a listing without it does); anything else is watched again.
func (w *waiter) ownFired(ev zk.Event) (waitState, error) {
	switch {
	case ev.Type == zk.EventNodeDeleted && !w.q.s.heardLately():
		// After a stall our session may have expired, deleting the node:
		// the listing tells (it fails with the session, or finds the
		// node gone from a live one).
		return stateListing, nil
	case ev.Type == zk.EventNodeDeleted:
		return stateListing, w.ownDeleted()
	case ev.Err != nil && expired(ev.Err):
		return stateListing, ErrSessionLost
	case ev.Type == zk.EventNotWatching:
		if err := w.q.s.gone(); err != nil {
			return stateListing, err
		}
	}
	return stateWatching, nil
}

// ownKept reports, as the wait is about to own, whether our node's
// deletion came before what let us own: then we do not.
func (w *waiter) ownKept() error {
	select {
	case ev := <-w.own:
		w.own = nil
		if ev.Type == zk.EventNodeDeleted {
			return w.ownDeleted()
		}
	default:
	}
	return nil
}

func (w *waiter) ownDeleted() error {
	if err := w.q.s.gone(); err != nil {
		return err
	}
	return fmt.Errorf("%w: %s (someone deleted it while it waited)", ErrNodeDeleted, w.q.full(w.t.name))
}

// belowGone is where a waiter goes once the node just below it is gone:
// owning when that node was the only lower one and we heard of it on the
// connection our own node's watch was set on, else listing again. Heard
// on a later one, the deletion may have come before our own node's that
// went first (see Session.connection); the listing, on the connection we
// are on, tells. A Kazoo lock node's deletion is listed after too: it
// may be a NonBlockingLease's, gone once its lease was written beside the
// queue (see kazooLeaseHolder), which only a listing shows.
func (w *waiter) belowGone() waitState {
	if w.onlyLower && w.ownConn != 0 && w.ownConn == w.q.s.connection() && !mayLeaveALease(w.below.name) {
		w.expectMark()
		return stateOwning
	}
	return stateListing
}

// expectMark predicts the group node's data version as we come to own
// after the node below ours, the owner at our last listing, went: what
// that listing showed, plus the one write of a herald owner's release
// where herald marks this group. A prediction that misses (the owner's
// session expired, or it gave up for another reason and wrote twice, or
// someone else wrote) costs the release a read, never a wrong write.
func (w *waiter) expectMark() {
	if !w.listedOK || !w.q.markKnownHerald() {
		w.t.markKnown = false
		return
	}
	w.t.markVersion, w.t.markKnown = w.listed, true
	if info, ok := ParseName(w.below.name); ok && info.Convention == "herald" {
		w.t.markVersion++
	}
}

// twoBelowGone is where a waiter goes once the node two below it is gone:
// listing, to learn whether the node just below is now the only lower one.
func twoBelowGone() waitState { return stateListing }

// warnBlind warns, once per queue, when a forced dialect put our node
// ours in a group (children) whose foreign client, by its name, cannot
// read it: the dialect is the user's word that it can (Kazoo's
// extra_lock_patterns), which herald cannot check. If it cannot, once it
// joins behind our owner it owns beside it, until our owner, seeing it,
// steps down (Handle's guard).
func (q *queue) warnBlind(children []string, ours string) {
	if q.blindWarned.Load() {
		return
	}
	n, node, blind := blindTo(children, ours, nil)
	if !blind || q.blindWarned.Swap(true) {
		return
	}
	fix := "no name of herald's can be read by it: give it a group of its own"
	if n.dialect != "" {
		fix = fmt.Sprintf("unless it is configured to read other names, give herald the %s dialect (--dialect %s, elect.WithDialect), or leave the dialect to herald", n.dialect, n.dialect)
	}
	q.s.log.Warn("the forced dialect names our node so that a client in the group cannot read it, by that client's own rules: should it queue behind a herald owner, both may believe they own until herald's owner steps down; "+fix,
		"group", q.parent, "node", ours, "dialect", q.o.dialect, "client", n.client, "client_node", node)
}

// wrapRefused refuses a queue (es) past the group counter's wrap that
// holds a client ordering it otherwise (wrapHazard). A node no session
// holds is no client, whatever its name. relist: a read failed, list
// again once the connection is back.
func (w *waiter) wrapRefused(ctx context.Context, es []entry) (relist bool, err error) {
	why, _, err := clientWrapHazard(es, func(node string) (bool, error) {
		_, session, err := ownerOf(ctx, w.q.s.Conn(), w.q.full(node))
		return session != 0, err
	})
	switch {
	case err != nil:
		return true, w.q.retryable(ctx, err)
	case why != "":
		return false, fmt.Errorf("%w: %s: %s", ErrUnsafeGroup, w.q.parent, why)
	}
	return false, nil
}

// fitDialect makes sure every foreign client in the group can order our
// node: when they need another dialect than our node's, our node is
// replaced by one named in theirs, at the end of the queue. Right after a
// create that is where our node was anyway; later, a foreign client that
// could not see our node has queued as if it were not there, and we go
// behind it. A group whose clients need different dialects is refused. A
// forced dialect is never changed. It returns true when the waiter must
// list again: its node was replaced, or a read it needed failed.
func (w *waiter) fitDialect(ctx context.Context, children []string) (bool, error) {
	if w.q.forced() {
		if relist, err := w.leaseRefused(ctx, children); err != nil || relist {
			return relist, err
		}
		w.q.warnBlind(children, w.t.name)
		return false, nil
	}
	d, others, err := w.q.learnFrom(children, w.t.name)
	if errors.Is(err, ErrUnsafeGroup) {
		// Only clients make a group unsafe: a node no session holds is
		// none, whatever its name (read on this path only, which is rare).
		live, rerr := w.q.heldBySessions(ctx, others)
		if rerr != nil {
			// Undecided: never go on as if the group were safe. true
			// sends the waiter back to listing once the connection is.
			return true, w.q.retryable(ctx, rerr)
		}
		d, others, err = w.q.learnFrom(live, w.t.name)
	}
	if err != nil {
		return false, fmt.Errorf("elect: %s: %w", w.q.parent, err)
	}
	if d == w.t.dialect || !hasNeeds(others) {
		return false, nil
	}
	if w.moves++; w.moves > maxMoves {
		return false, fmt.Errorf("%w: %s: foreign clients keep joining that need other node names than ours (%d replacements); give each client its own group or force a dialect", ErrUnsafeGroup, w.q.parent, maxMoves)
	}
	if err := w.q.remove(ctx, w.t.name, ReasonCancelled); err != nil {
		return false, w.q.retryable(ctx, err)
	}
	old := w.t.name
	w.q.abandon(old) // gone already: notes it withdrawn, off the waiter's path
	w.t, w.own, w.seenSession = ticket{}, nil, ""
	t, err := w.q.enqueue(ctx, w.data)
	if err != nil {
		return false, err
	}
	w.q.s.log.Debug("replaced our queue node to fit the group's dialect", "group", w.q.parent, "old", old, "new", t.name, "dialect", d)
	w.t = t
	return true, nil
}

// leaseRefused refuses a group where a semaphore holds outside the queue
// (outsideQueue) whatever dialect was forced: no name of ours puts us
// behind it. A Kazoo lease no session holds is none. relist: a read
// failed, list again once the connection is back.
func (w *waiter) leaseRefused(ctx context.Context, children []string) (relist bool, err error) {
	leases := slices.DeleteFunc(slices.Clone(children), func(c string) bool { return !outsideQueue(c) })
	if len(leases) == 0 {
		return false, nil // the usual case: no read
	}
	live, err := w.q.heldBySessions(ctx, leases)
	if err != nil {
		return true, w.q.retryable(ctx, err)
	}
	if len(live) == 0 {
		return false, nil
	}
	_, _, err = needOf(live[0])
	return false, fmt.Errorf("elect: %s: %w", w.q.parent, err)
}

// learnFrom reads the dialect the group's other clients need from its
// children (ours, named so, left out) and makes it the one our next node
// is written in; it returns the dialect and the others. A group whose
// clients need different dialects is an error, and teaches nothing.
func (q *queue) learnFrom(children []string, ours string) (Dialect, []string, error) {
	others := slices.DeleteFunc(slices.Clone(children), func(c string) bool { return c == ours })
	d, err := groupDialect(q.recipe, others)
	if err != nil {
		return "", others, err
	}
	q.learnDialect(d)
	return d, others, nil
}

// heldBySessions is children without the nodes named like a foreign client
// that no session holds (or that are gone): each such name is read.
func (q *queue) heldBySessions(ctx context.Context, children []string) ([]string, error) {
	var live []string
	for _, c := range children {
		if _, ok, err := needOf(c); !ok && err == nil {
			live = append(live, c) // imposes nothing: no need to ask
			continue
		}
		_, client, err := clientHolds(ctx, q.s.Conn(), q.full(c))
		if err != nil {
			return nil, err
		}
		if client {
			live = append(live, c)
		}
	}
	return live, nil
}

// hasNeeds reports whether any child imposes a dialect.
func hasNeeds(children []string) bool {
	return slices.ContainsFunc(children, func(c string) bool {
		_, ok, _ := needOf(c)
		return ok
	})
}
