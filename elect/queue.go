package elect

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"sync/atomic"
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

	mu sync.Mutex
	// dialect is what the next create writes: the forced one, or what the
	// last listing said the group's foreign clients require.
	dialect Dialect
	// rot: the predecessors of our last waits, to guess the next one.
	rot rotation
	// mark says whether herald may write the group node's data (see
	// group.go): markUnknown until a listing or a read tells.
	mark         markState
	markFetching bool // prefetchMark is reading it
	// groupRecipe is the recipe herald's mark on the group node names, once
	// read: a release writes it back, so that a lock taken in an election's
	// group (or the reverse) does not turn the group into its own kind.
	groupRecipe Recipe
	// sessionNode is the session whose session node (see session_node.go)
	// this group's office holds, or which gave up on one for good.
	sessionNode atomic.Int64
	// blindWarned: a wait in a forced dialect warned of a client that
	// cannot read our names (see warnBlind), once per queue.
	blindWarned atomic.Bool
}

func newQueue(s *Session, parent string, recipe Recipe, prefix string, opts []Option) (*queue, error) {
	if s == nil {
		return nil, errors.New("elect: nil session")
	}
	if err := ValidatePath(parent); err != nil {
		return nil, err
	}
	if b := path.Base(parent); b == OfficeNode || b == CheckpointNode {
		return nil, fmt.Errorf("elect: %s is herald's %s node of the group %s, not a group; give the group's path (%s)", parent, b, path.Dir(parent), path.Dir(parent))
	}
	o := defaultRecipeOptions(prefix)
	for _, opt := range opts {
		if opt == nil {
			return nil, errNilOption
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.sessionProof && o.policy == LoseOnExpiry {
		return nil, errors.New("elect: ProveSessionEnd with LoseOnExpiry: under LoseOnExpiry an owner's work runs on past its session's end, so that end proves nothing to the next owner; use one or the other")
	}
	if r := o.sessionRoot; r != "" && (r == parent || strings.HasPrefix(r, parent+"/")) {
		if o.rootSet {
			return nil, fmt.Errorf("elect: session root %s is in the group %s, which may hold only queue nodes: give a path outside every group (default %s)", r, parent, DefaultSessionRoot)
		}
		o.sessionRoot = "" // the default falls inside this group: keep none
	}
	if !o.aclSet {
		o.acl = s.DefaultACL()
	}
	if err := s.claimWaits(o.waits); err != nil {
		return nil, err
	}
	q := &queue{s: s, parent: parent, recipe: recipe, o: o, dialect: o.dialect}
	if q.dialect == DialectAuto {
		q.dialect = defaultDialect(recipe)
	}
	return q, nil
}

// forced reports whether the user chose the dialect.
func (q *queue) forced() bool { return q.o.dialect != DialectAuto }

func (q *queue) nextDialect() Dialect {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dialect
}

func (q *queue) learnDialect(d Dialect) {
	q.mu.Lock()
	q.dialect = d
	q.mu.Unlock()
}

// prefix is the classic dialect's prefix: "candidate-" or "lock-", or
// WithPrefix's.
func (q *queue) prefix() string { return q.o.prefix }

// ticket is our place in the queue. czxid is known only when the node was
// found again after a lost create reply; otherwise the handle learns it
// from its first watch on the node (see Handle.Term).
type ticket struct {
	name    string
	seq     int32
	czxid   int64
	dialect Dialect
	// markVersion is the group node's data version as this ticket came to
	// own, when the waiter could tell (markKnown): an owner writes its
	// release mark only over that version (see deleteMarked).
	markVersion int32
	markKnown   bool
	// ownW is the waiter's watch on this node, when it set one: the
	// handle's own watch from then on.
	ownW <-chan zk.Event
	// prev is the last node that can have owned before this one, as the
	// wait last saw the queue: the node just below ours ("" when it saw
	// none). prevLowest is when the wait first saw prev as the lowest
	// node, every owner before it gone (zero when it never did).
	// prevSession, when not nil, is whether prev's session node, seen
	// while it was there, is still trusted to go only with its session
	// (see seeSessionNode).
	prev        string
	prevLowest  time.Time
	prevSession *sessionTrust
	// prevListing is the group's last listing that showed prev: every
	// child it had, and its counter of creates then (see ownersEndAt),
	// kept fresh while the wait was next in line (see watchListing).
	prevListing groupListing
	// madeOffice: the transaction that made this node made the group's
	// office just before it (see createNode).
	madeOffice bool
	// noneGone: the listing that showed this node lowest showed every
	// child the group ever had still there (its counter, which counts
	// creates, equal to its children): no owner can have gone before it.
	noneGone bool
	// aboveGone are the numbers after this node's that the last listing
	// showing it found gone (see goneAbove): none of them ever owned, and
	// its release says so on the mark.
	aboveGone []seqRun
}

func (q *queue) full(name string) string { return q.parent + "/" + name }

// enqueue creates our node, named in the dialect the group needs. On
// connection loss during the create the outcome is unknown: we look for
// our node by the herald id in its name and accept it only if its
// ephemeralOwner is our session; otherwise we create again. A cancelled
// ctx never leaves a node behind.
func (q *queue) enqueue(ctx context.Context, data []byte) (ticket, error) {
	t, _, err := q.enqueueListing(ctx, data, false)
	return t, err
}

// enqueueListing is enqueue that, when list is set, also lists the group
// right behind the create (see listBehind): the listing comes on the
// channel, if it was sent.
func (q *queue) enqueueListing(ctx context.Context, data []byte, list bool) (ticket, <-chan listed, error) {
	d := q.nextDialect()
	id := heraldID{session: q.s.ID(), nonce: q.s.nextNonce(), recipe: q.recipe}
	base, marker := nodeBase(d, id, q.prefix()), marker(d, id)
	conn := q.s.Conn()
	for attempt := 0; ; attempt++ {
		if err := q.s.gone(); err != nil {
			return ticket{}, nil, err
		}
		created, madeOffice, pre, err := q.create(ctx, conn, base, d, data, marker, list)
		switch {
		case err == nil:
			seq, _ := ParseSequence(path.Base(created))
			return ticket{name: path.Base(created), seq: seq, dialect: d, madeOffice: madeOffice}, pre, nil
		case errors.Is(err, zk.ErrNoNode):
			if !q.o.createParents {
				return ticket{}, nil, fmt.Errorf("%w: %s; create it first (herald never guesses ACLs for you) or use CreateParents", ErrNoParent, q.parent)
			}
			if err := q.createParents(ctx); err != nil {
				return ticket{}, nil, err
			}
		case errors.Is(err, zk.ErrNoAuth):
			return ticket{}, nil, fmt.Errorf("elect: not allowed to create nodes under %s: %w; check the ACL and your credentials", q.parent, err)
		case connLoss(err):
			// Before ctx: a create whose reply was lost as ctx ended too
			// may have landed, and findAfterLoss sweeps for it.
			t, found, err := q.findAfterLoss(ctx, marker)
			if err != nil {
				return ticket{}, nil, err
			}
			if found {
				if q.o.sessionProof && q.keepsSessionNode(d) {
					q.sessionNode.Store(q.s.ID()) // made with it, if at all
				}
				t.dialect = d
				return t, nil, nil
			}
		case ctx.Err() != nil:
			return ticket{}, nil, ctx.Err() // create cleans up behind us
		case expired(err):
			return ticket{}, nil, ErrSessionLost
		case errors.Is(err, zk.ErrNoChildrenForEphemerals):
			return ticket{}, nil, fmt.Errorf("elect: %s is an ephemeral node (a single-node leader such as Kafka's /controller, or a queue node), which cannot hold a queue; give the path of a group, a persistent node: %w", q.parent, err)
		default:
			return ticket{}, nil, fmt.Errorf("elect: create node under %s: %w", q.parent, err)
		}
	}
}

// create sends the create of our node. A caller that gives up (ctx) while
// the create is on its way does not leave the node behind: once the reply
// comes, a node it made is removed, and a reply lost with the connection
// has the group swept for our marker. Giving up must wait for that reply,
// not list the group at once: the create may not even have been sent yet,
// and a listing sent before it would find nothing while the node it makes
// stayed, unowned, blocking every later participant for the session's life.
func (q *queue) create(ctx context.Context, conn *zk.Conn, base string, d Dialect, data []byte, marker string, list bool) (string, bool, <-chan listed, error) {
	type result struct {
		name       string
		madeOffice bool
		err        error
	}
	ch := make(chan result, 1)
	var written <-chan struct{}
	var stop func()
	if list {
		written, stop = q.s.afterWrite(marker) // before the create can be written
	}
	created := make(chan struct{})
	go func() {
		name, madeOffice, err := q.createNode(context.WithoutCancel(ctx), conn, base, d, data)
		close(created)
		ch <- result{name, madeOffice, err}
	}()
	var pre <-chan listed
	if list {
		pre = q.listBehind(conn, written, created, stop)
	}
	select {
	case r := <-ch:
		if r.err == nil {
			q.checkGroup()
		}
		return r.name, r.madeOffice, pre, r.err
	case <-ctx.Done():
	}
	q.s.background(func() {
		r := <-ch
		switch {
		case r.err == nil:
			q.abandon(path.Base(r.name))
		case connLoss(r.err):
			q.sweep(marker)
		}
	})
	return "", false, nil, ctx.Err()
}

// listed is a listing of the group sent right behind our create (see
// listBehind); at is when its reply came.
type listed struct {
	children []string
	st       *zk.Stat
	at       time.Time
	err      error
}

// errNotListed: listBehind did not list.
var errNotListed = errors.New("elect: no listing behind the create")

// listBehind lists the group right behind our create, as soon as the
// create is written to the connection (written closes) rather than once
// its reply came: the server answers the listing after the create, so it
// shows our node, and the round trip a listing sent after the reply would
// cost is saved. Should the create end (created closes) without having
// been seen written (it failed first, or the connection was replaced), it
// does not list. A listing that does not show our node is never used as
// ours (see waiter.list).
func (q *queue) listBehind(conn *zk.Conn, written, created <-chan struct{}, stop func()) <-chan listed {
	out := make(chan listed, 1)
	go func() {
		defer stop()
		select {
		case <-written:
		case <-created:
			select {
			case <-written:
			default:
				out <- listed{err: errNotListed}
				return
			}
		}
		c, st, err := conn.Children(q.parent)
		out <- listed{children: c, st: st, at: time.Now(), err: err}
	}()
	return out
}

// errNotOurs: a node carrying our marker belongs to another session.
var errNotOurs = errors.New("elect: not our node")

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
				return ticket{}, fmt.Errorf("%w: node %s belongs to session 0x%x, not ours (0x%x)", errNotOurs, q.full(name), st.EphemeralOwner, q.s.ID())
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

// findAfterLoss looks for our node once the connection is back, after a
// create whose outcome is unknown. Given up on (ctx ended, or the listing
// failed), the create may have landed, or may still: any node with our
// marker is then removed in the background.
func (q *queue) findAfterLoss(ctx context.Context, marker string) (ticket, bool, error) {
	err := ctx.Err()
	if err == nil {
		err = q.s.awaitConnected(ctx)
	}
	if err == nil {
		t, found, ferr := q.find(ctx, marker)
		if ferr == nil {
			return t, found, nil
		}
		err = ferr
	}
	if !errors.Is(err, ErrSessionLost) { // an ended session took the node with it
		q.s.background(func() { q.sweep(marker) })
	}
	if ctx.Err() != nil {
		return ticket{}, false, ctx.Err()
	}
	return ticket{}, false, err
}

// find looks for our node after a create whose reply was lost. Only a
// listing that answered may say it is not there: a listing lost too is
// asked again, for a create made again beside a node that landed would
// leave ours in the queue, unowned, for the session's life.
func (q *queue) find(ctx context.Context, marker string) (ticket, bool, error) {
	var children []string
	for {
		var err error
		children, err = q.caughtUpChildren(ctx)
		if err == nil {
			break
		}
		if expired(err) {
			return ticket{}, false, ErrSessionLost
		}
		if errors.Is(err, zk.ErrNoNode) {
			// No group, so no node of ours: the create whose reply was
			// lost found no parent (the caller creates it and tries
			// again), or the group was deleted whole, our node with it.
			return ticket{}, false, nil
		}
		if !connLoss(err) || ctx.Err() != nil {
			return ticket{}, false, err
		}
		if err := q.s.awaitConnected(ctx); err != nil {
			return ticket{}, false, err
		}
	}
	for _, c := range children {
		if !strings.Contains(c, marker) {
			continue
		}
		t, err := q.stamp(ctx, c)
		switch {
		case err == nil:
			return t, true, nil
		case errors.Is(err, ErrNodeDeleted) || errors.Is(err, errNotOurs):
			return ticket{}, false, nil
		}
		// Not known whether it is ours, and still there: the caller
		// sweeps for it, as for a create given up on.
		return ticket{}, false, err
	}
	return ticket{}, false, nil
}

// caughtUpChildren lists the group once its server has caught up with
// the leader (a sync), for find and sweep. The member we reconnected to may not
// hold our create yet: the leader answers a sync only after the proposals
// it took before it, our create among them, while a listing there alone
// is answered from that member's own copy. Our session never saw the
// create's zxid, so nothing else has the member wait for it; a listing
// without the sync said the node was not there, the create was made
// again, and the first, ours but unknown to us, owned the group for the
// session's life (TestLostCreateStillUncommittedIsFoundOnAnotherMember).
func (q *queue) caughtUpChildren(ctx context.Context) ([]string, error) {
	if _, err := call(ctx, func() (string, error) { return q.s.Conn().Sync(q.parent) }); err != nil {
		return nil, err
	}
	return call(ctx, func() ([]string, error) {
		c, _, err := q.s.Conn().Children(q.parent)
		return c, err
	})
}

// sweep gives up (see giveUp) any node carrying our marker; used when a
// create was abandoned and might still have landed.
func (q *queue) sweep(marker string) {
	ctx, cancel := context.WithTimeout(context.Background(), q.o.releaseWait)
	defer cancel()
	for ctx.Err() == nil && q.s.gone() == nil {
		if err := q.s.awaitConnected(ctx); err != nil {
			return
		}
		// Caught up, as find is: a create still a proposal when its
		// connection went is missing from another member's copy, and
		// would commit after a listing there, held for our session's life.
		children, err := q.caughtUpChildren(ctx)
		if errors.Is(err, zk.ErrNoNode) {
			// The group is gone, any node of ours with it; listed again at
			// once, it was thousands of requests until the deadline.
			return
		}
		if err != nil {
			retryPause(ctx) // a refusal that stays (no right to list) spun
			continue
		}
		clean := true
		for _, c := range children {
			if strings.Contains(c, marker) {
				if err := q.giveUp(ctx, c); err != nil {
					clean = false
				}
			}
		}
		if clean {
			return
		}
		retryPause(ctx) // a delete the group's ACL refuses spun the same way
	}
}

// retryPause waits a little, or until ctx ends, before a background
// clean-up tries again: one whose failure stays (the group's ACL refuses
// us) went on without a pause, thousands of requests until its deadline.
func retryPause(ctx context.Context) {
	t := time.NewTimer(50 * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// abandon removes, in the background with a fresh context (the caller's
// may be cancelled already), a node of ours that never owned and will not
// be used: a create that landed after its caller gave up, or a waiter that
// gave up while cut off from the servers (see withdraw).
func (q *queue) abandon(name string) {
	q.s.background(func() {
		ctx, cancel := context.WithTimeout(context.Background(), q.o.releaseWait)
		defer cancel()
		for ctx.Err() == nil && q.s.gone() == nil {
			if err := q.giveUp(ctx, name); err == nil {
				return
			}
			retryPause(ctx)
			if err := q.s.awaitConnected(ctx); err != nil {
				return
			}
		}
	})
}

// withdraw removes the node of a waiter that gave up before it owned (its
// wait timed out or was cancelled, or a try found the group held) and
// notes it withdrawn (see giveUp). While connected it is done before the
// caller hears that it gave up, within withdrawWait: a caller that closes
// its session right after (a `herald lock --timeout` that exits) would cut
// a note left to the background, and the next copy would wait. The bound
// is short, since a waiter whose context ended must return soon even when
// cut off from the servers (TestCancelWaiterDuringPartition); past it, or
// disconnected, it goes on in the background.
func (q *queue) withdraw(name string) {
	if st, _ := q.s.State(); st == StateConnected {
		ctx, cancel := context.WithTimeout(context.Background(), withdrawWait)
		err := q.giveUp(ctx, name)
		cancel()
		if err == nil {
			return
		}
	}
	q.abandon(name)
}

// withdrawWait bounds the part of withdraw its caller waits for.
const withdrawWait = 500 * time.Millisecond

// giveUp removes name, a node of ours that never owned, and then notes on
// the group node that it left without owning (groupMark.WithdrawnRuns): a
// `herald run` or `herald lock` copy made after it that finds nothing
// below its own then knows that nobody owned in between, where it waited
// as for an owner deleted by hand. Every node herald makes and leaves
// unowned goes this way (a waiter that gives up, a create that landed after
// its caller gave up or whose reply was lost, a node replaced by one in
// another dialect), so that none leaves a gap in the group's record. The
// node goes first, at once: a node that gave up and stayed while the
// note's read went out would be the lowest for that long, and observers
// take the lowest node for the owner. A copy that looks between the two
// waits, and its watch on the group node tells it of the note. The note is
// written twice, as a release for any reason but a resignation is, so that
// observers read the mark rather than take the write for a release. Where
// herald may not write the group node, or its mark records a release after
// our node, there is no note (the session node's, see remove, tells
// observers).
func (q *queue) giveUp(ctx context.Context, name string) error {
	seq, ok := ParseSequence(name)
	if !ok || q.markState() == markForeign || q.markState() == markDenied {
		return q.remove(ctx, name, ReasonCancelled)
	}
	return q.withdrawNoted(ctx, name, seq)
}

// withdrawNoted is one attempt of giveUp: the node deleted (again, if an
// earlier attempt got that far), then the note.
func (q *queue) withdrawNoted(ctx context.Context, name string, seq int32) error {
	if err := q.remove(ctx, name, ReasonCancelled); err != nil {
		return err
	}
	for tries := 0; tries < 4; tries++ {
		b, v, ok, err := q.readGroupData(ctx)
		if err != nil {
			return err
		}
		data, noted := withdrawnMark(b, seq, q.markRecipe())
		if !ok || !noted {
			return nil
		}
		res, err := multi(ctx, q.s.Conn(), markWrites(q.parent, data, v, 2)...)
		switch {
		case failedAt(res, 0, zk.ErrBadVersion):
			continue // someone wrote the group node: read it again
		case errors.Is(err, zk.ErrNoAuth) || failedAt(res, 0, zk.ErrNoAuth):
			q.setMark(markDenied)
			return nil
		case failedAt(res, 0, zk.ErrNoNode):
			return nil // the group went
		}
		return err
	}
	return nil
}

// remove deletes our queue node name, where why it goes (why) is
// recorded nowhere else: where our session keeps a session node for it,
// the note of why goes there in the same transaction (see deleteNoted),
// so that an observer tells this deletion from someone else's.
func (q *queue) remove(ctx context.Context, name string, why Reason) error {
	return q.removeNoted(ctx, name, why, false)
}

// removeRecord is remove for an owner's node that goes with rec, its
// release record, where rec is written nowhere else.
func (q *queue) removeRecord(ctx context.Context, name string, rec *Release) error {
	return q.removeNoted(ctx, name, rec.Reason, rec.Vouches)
}

// removeNoted is remove, the note also saying whether the owner vouches
// for the owners before it (see Release.Vouches).
func (q *queue) removeNoted(ctx context.Context, name string, why Reason, vouches bool) error {
	live := q.ownSessionNode(name)
	refused, err := deleteNoted(ctx, q.s.Conn(), q.full(name), live, why, vouches, q.s.Timeout(), q.o.waits)
	if refused {
		q.s.ownSessionNodes.Delete(live)
		q.s.log.Debug("our session node takes no note: an observer may report our node deleted by someone else",
			"group", q.parent, "node", live)
	}
	if err == nil || errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// afterLoss runs f, again once the session is connected after a lost
// connection (a server restarted, the client frozen), for requests that
// may safely be made twice. A session that ended meanwhile fails it with
// ErrSessionLost, so that a caller that starts a session again does.
func afterLoss[T any](ctx context.Context, s *Session, f func() (T, error)) (T, error) {
	for {
		v, err := call(ctx, f)
		switch {
		case expired(err) && !errors.Is(err, ErrSessionLost):
			return v, fmt.Errorf("%w: %w", ErrSessionLost, err)
		case !connLoss(err) || ctx.Err() != nil:
			return v, err
		}
		if err := s.awaitConnected(ctx); err != nil {
			return v, err
		}
	}
}

func (q *queue) createParents(ctx context.Context) error {
	acl := ParentACL(q.o.acl)
	p, missing := "", false
	for _, seg := range strings.Split(q.parent[1:], "/") {
		p += "/" + seg
		if !missing {
			exists, err := afterLoss(ctx, q.s, func() (bool, error) { ok, _, err := q.s.Conn().Exists(p); return ok, err })
			if err != nil {
				return fmt.Errorf("elect: create parent %s: %w", p, err)
			}
			if exists {
				continue
			}
			missing = true
			if err := q.nestable(ctx, p); err != nil {
				return err
			}
		}
		var data []byte
		if p == q.parent {
			data = markData(q.recipe)
		}
		// Made again after a lost reply, a parent that landed is there.
		_, err := afterLoss(ctx, q.s, func() (string, error) { return q.s.Conn().Create(p, data, 0, acl) })
		if errors.Is(err, zk.ErrNoChildrenForEphemerals) {
			// Only the first missing parent can meet this, so nothing
			// was made: name the node that stops the path, not p.
			return fmt.Errorf("elect: cannot create %s: %s is an ephemeral node (a single-node leader such as Kafka's /controller, or a queue node), which cannot have children; give the group a path of persistent nodes, outside %s: %w", q.parent, path.Dir(p), path.Dir(p), err)
		}
		if errors.Is(err, zk.ErrNoAuth) {
			// Another identity's node (a runner's /herald, to a bridge
			// with --ha /herald/bridges): say whose, and what admits us.
			return fmt.Errorf("elect: create parent %s: %w", p, rootRefused(ctx, q.s.Conn(), path.Dir(p), namedACL(q.o.acl, q.s.digestACL), err))
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("elect: create parent %s: %w", p, err)
		}
		if err == nil && p == q.parent {
			q.setMark(markHerald)
			q.noteRecipe(q.recipe)
		}
	}
	return nil
}

// nestable refuses to create p inside a herald group (its parent carries
// herald's mark): a node there sits among the group's queue nodes. Named
// with a trailing sequence number, every client of the group would take
// it for a queue node no session holds and wait behind it for good; named
// otherwise, go-zookeeper's Lock, which parses every child, fails on it.
func (q *queue) nestable(ctx context.Context, p string) error {
	parent := path.Dir(p)
	if parent == "/" {
		return nil
	}
	if r, ok := readGroupRecipe(ctx, q.s.Conn(), parent); ok {
		return fmt.Errorf("elect: will not create %s: %s is a herald %s group, and a node inside it would sit among its queue nodes (one whose name ends in a sequence number would block its queue for good); give the group a path outside %s", p, parent, r, parent)
	}
	return nil
}

// list returns the parsed queue, lowest first, every child's name, the
// group node's data version and the group's sequence counter (see
// counter).
func (q *queue) list(ctx context.Context) (es []entry, children []string, version, next int32, err error) {
	type listing struct {
		c  []string
		st *zk.Stat
	}
	got, err := call(ctx, func() (listing, error) {
		c, st, err := q.s.Conn().Children(q.parent)
		return listing{c, st}, err
	})
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil, 0, 0, fmt.Errorf("%w: %s", ErrNoParent, q.parent)
		}
		return nil, nil, 0, 0, unlistable(q.parent, err)
	}
	q.noteGroup(got.st)
	es, next = parseListing(got.c, got.st.Cversion)
	return es, got.c, got.st.Version, next, nil
}

// unlistable says what a refused listing of group means: a participant
// that may not list the group cannot tell where its node stands.
func unlistable(group string, err error) error {
	if !errors.Is(err, zk.ErrNoAuth) {
		return err
	}
	return fmt.Errorf("elect: may not list %s: %w (its ACL does not let this identity READ it); every participant and observer must read the group: check its ACL and your credentials", group, err)
}

// nodeWatched reads the reply that set a watch on name, a node ours waits
// behind: whether it is there and the watch. The watch is set with
// getData, which sets one only on a node that exists; exists would leave
// a watch behind on a missing name, and a sequential name never comes back
// to fire it.
func (q *queue) nodeWatched(name string, r nodeWatch) (bool, <-chan zk.Event, error) {
	if r.found && r.st.EphemeralOwner == 0 {
		// Every recipe waits for it too; only a person can end the wait.
		q.s.log.Warn("waiting behind a node no session holds: it is not ephemeral, so it never goes away by itself; if it is a leftover, delete it", "group", q.parent, "node", name)
	}
	if errors.Is(r.err, zk.ErrNoAuth) {
		// exists would set the watch, but ZooKeeper sends its event only
		// to a session that may read the node: we would wait forever.
		return false, nil, fmt.Errorf("elect: may not read %s, the node ours waits behind: %w; grant READ to every participant in the nodes' ACL", q.full(name), r.err)
	}
	return r.found, r.ch, r.err
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
