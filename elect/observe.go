package elect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect/ident"
)

// View is the state of a group at one moment.
type View struct {
	Group  string
	Recipe Recipe
	// Owner is the lowest node that is not suspect (nil when the queue is
	// empty, or when Blocked holds it up).
	Owner *Participant
	// Queue holds every queue node in order, owner first.
	Queue []Participant
	// Office is herald's office record, when the group has one.
	Office *Office
	// Cversion and Pzxid are the parent's child version and the zxid of the
	// last child change.
	Cversion int32
	Pzxid    int64
	// OfficeZxid is the mzxid of the office record.
	OfficeZxid int64
	// Exists is false when the group path does not exist.
	Exists bool
	// Hazard, when not empty, says why two clients of the group may each
	// believe they own at once: a foreign client in it cannot read a node
	// below its own by sequence (Kazoo's Lock beside a name without
	// "__lock__", Curator beside a name not ending in its lock name and
	// the sequence). Owner is still the lowest node; the other client may
	// think otherwise.
	Hazard string
	// HazardNode is the node of the client Hazard names: the one that may
	// believe it owns although it is not the lowest.
	HazardNode string
	// Blocked is the suspect node the queue waits behind, when there is
	// one: it sorts below every node that would own and is older, so
	// that node's listing showed it and it waits for its deletion (also
	// the lowest of a queue of suspects only: whoever joins next waits
	// behind it). Nobody owns until it goes, and a node no session holds
	// never goes by itself: someone must delete it.
	Blocked *Participant
	// LastRelease is the last release herald recorded on the group node
	// (a resignation or release, or a lock owner's other reason; see
	// groupMark), read by ReadGroup when the group has no owner: when it
	// became ownerless, if a herald owner was the last and no node came
	// or went since (nil otherwise: then that time is not known).
	LastRelease *Release
	// children are all child names, queue or not (to account for cversion).
	children []string
	// ownerOnly: only the owner is known (see AfterOwner).
	ownerOnly bool
	// mzxid is the group node's data zxid; released is the release its
	// mark records, when it had to be read (see readRelease).
	mzxid    int64
	released *Release
	// version is the group node's data version; markedOnce says the mark
	// was written once since the last read, in the very transaction of the
	// last child change: a resignation or release (see readRelease).
	version    int32
	markedOnce bool
	// markUnread says the mark changed but could not be read.
	markUnread bool
	// groupCzxid is the zxid that created the group node: a group deleted
	// and made again may reuse its old children's names (sequences start
	// again at 0), so names are compared only within one group node.
	groupCzxid int64
	// markedBy is the owner the mark's release must be, when the listings
	// alone tell (see releaseBase.onlyRelease).
	markedBy string
	// endedNode is the node (the last owner, or a waiter) gone alone since
	// the last read without a release on record, and endedWhy why, as its
	// session node tells (see readUnrecordedEnd).
	endedNode string
	endedWhy  Reason
	// heldAsOf, on the last view before a stretch not seen (a lost
	// connection), is the newest moment ZooKeeper vouched for it: Owner
	// still held after it (see Session.Answered). Zero when unknown.
	heldAsOf time.Time
	// epoch is a single-node leader's epoch (SingleView.Epoch), when
	// epochKnown: kept so that an observation continued from this view
	// (Since, or a report's ReportEpoch) counts the elections in between
	// exactly, as the observer that read it would have.
	epoch      int64
	epochKnown bool
}

// OfficeUnreadable reports whether the group has an office node holding
// data herald did not write (someone else's set): whether the owner took
// office, and why the last one went, are then not known from it.
func (v View) OfficeUnreadable() bool { return v.Office == nil && v.OfficeZxid != 0 }

// Ready reports whether the owner acknowledged taking office.
func (v View) Ready() bool {
	return v.Owner != nil && v.Office != nil && v.Office.Ack != nil && v.Office.Ack.Node == v.Owner.Node
}

// ReadGroup reads a group once, without watches: the queue, the owner (its
// id from the node's data, its term and session from its stat) and herald's
// office record.
//
// The session's server first catches up with the ZooKeeper leader (see
// catchUp), so the answer is no older than the call.
func ReadGroup(ctx context.Context, s *Session, group string) (View, error) {
	if s == nil {
		return View{}, errNilSession
	}
	if err := ValidatePath(group); err != nil {
		return View{}, err
	}
	if err := catchUp(ctx, s, group); err != nil {
		return View{}, err
	}
	r := reader{conn: s.Conn(), group: group, everyID: true}
	v, err := r.read(ctx, false)
	if err == nil && !v.Exists {
		return v, fmt.Errorf("%w: %s", ErrNoParent, group)
	}
	if err == nil && v.Owner == nil {
		v.LastRelease = readMarkRelease(ctx, s.Conn(), group)
	}
	return v, err
}

// catchUp has the session's server catch up with the ZooKeeper leader
// (a sync) before a one-shot read of p. A server answers reads from its own
// copy, and a follower cut off from the leader goes on answering from it
// until it notices (ZooKeeper's syncLimit, seconds): a read asked "who
// owns now" must not present that copy as current. A server that cannot
// reach the leader then fails the read instead. Watching readers need no
// sync: their watches bring every later change.
func catchUp(ctx context.Context, s *Session, p string) error {
	_, err := call(ctx, func() (string, error) { return s.Conn().Sync(p) })
	switch {
	case err == nil:
		return nil
	case s.gone() != nil:
		// Closed or expired: no retry reads anything on this session.
		return fmt.Errorf("elect: reading %s: %w", p, s.gone())
	case connLoss(err):
		return fmt.Errorf("%w: catching up with the ZooKeeper leader before reading %s, the connection was lost (%v); a server cut off from the leader drops its clients: try again, or another server",
			ErrUnreachable, p, err)
	}
	return fmt.Errorf("elect: catching up with the ZooKeeper leader before reading %s: %w", p, err)
}

// ListChildren lists p's children, sorted; a p that does not exist has
// none. It gives up when ctx ends.
func ListChildren(ctx context.Context, c *zk.Conn, p string) ([]string, error) {
	children, err := call(ctx, func() ([]string, error) {
		cs, _, err := c.Children(p)
		return cs, err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("list %s: %w", p, err)
	}
	sort.Strings(children)
	return children, nil
}

// readMarkRelease is the last release herald's mark on the group node
// records, nil when there is none (or it cannot be read).
//
// The release is the group's last change only when no child came or went
// after it: a release writes its mark in the transaction that deletes
// the owner's node, so the group node's data and children changed at
// the same zxid. A later change of the children (an owner after it whose
// session ended, a waiter that came and went) leaves when the group
// became ownerless unknown, and nil is returned.
func readMarkRelease(ctx context.Context, conn *zk.Conn, group string) *Release {
	b, st, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return conn.Get(group) })
	if err != nil || st.Pzxid > st.Mzxid {
		return nil
	}
	m, _ := decodeMark(b)
	if len(m.Withdrawn) > 0 && !m.accountedBefore(markCounter(m, st), false) {
		// Written last by a waiter that withdrew, perhaps after an owner
		// after the release whose session ended: the write made the
		// queue's last change, but not the release.
		return nil
	}
	return m.Released
}

// markCounter is the group's sequence counter (see counter) from its stat,
// the numbers the mark names telling its top bit.
func markCounter(m groupMark, st *zk.Stat) int32 {
	var es []entry
	if m.Released != nil {
		if rs, ok := ParseSequence(m.Released.Node); ok {
			es = append(es, entry{seq: rs})
		}
	}
	for _, w := range m.Withdrawn {
		es = append(es, entry{seq: w})
	}
	return counter(st.Cversion, int(st.NumChildren), es)
}

// decodeMarkRelease reads the release in herald's mark, nil when the data
// is not herald's mark or records none.
func decodeMarkRelease(b []byte) *Release {
	m, _ := decodeMark(b)
	return m.Released
}

type reader struct {
	conn   *zk.Conn
	group  string
	recipe Recipe
	// cached owner details: the owner node's stat and data never change
	// while it exists, so they are read once per owner. With watch reads
	// the read also arms a data watch on the owner, ownerW: herald's
	// release writes the owner's node before deleting it, so the watch
	// firing as NodeDataChanged says the owner let go by its own call.
	owner  *Participant
	ownerW <-chan zk.Event
	// everyID reads every node's data and stat, not only the owner's (a
	// one-shot read for people; the observer reads only the owner's).
	everyID bool
	// noOwnerWatch reads the owner without a data watch: the children
	// watch alone tells when it goes (ObserveMany, where a watch per group
	// less is memory saved on both sides).
	noOwnerWatch bool
	// askedGroup: the group node's data was read for herald's recipe mark.
	askedGroup bool
	// ownerBefore: an earlier observation saw an owner (Since,
	// AfterReport), so a missing group is read with the zxid as of which
	// it is known gone (goneAsOf): that owner's end. Otherwise a missing
	// group reads at zxid 0, the same for every bridge.
	ownerBefore bool
	// hint is the recipe an earlier observation knew (Since, AfterReport),
	// for when nothing in the group tells: an emptied lock stays a lock
	// across a new session or a bridge's restart.
	hint Recipe
	// suspects are the queue nodes found suspect, and why (see
	// suspicion); lastOwner and lastChildren are the last read's owner and
	// queue nodes, to tell a node that appeared below the owner.
	suspects map[string]suspectNode
	// clients are the nodes a hazard named that a session holds (see
	// hazardOf).
	clients      map[string]bool
	lastOwner    *entry
	lastChildren []string
	// lastMzxid and lastVersion are the group node's data zxid and
	// version at the last read; rel is what that read showed, for
	// readRelease.
	lastMzxid   int64
	lastVersion int32
	rel         releaseBase
	// groupCzxid is the group node's czxid at the last read (0 when it
	// was missing): what the reader keeps by name belongs to that node.
	groupCzxid int64
}

type watches struct {
	children <-chan zk.Event
	office   <-chan zk.Event
	exists   <-chan zk.Event
	owner    <-chan zk.Event
}

// read lists the group; with watch it also arms a children watch (or an
// exists watch when the group is missing) and a data watch on the office.
func (r *reader) read(ctx context.Context, watch bool) (View, error) {
	v, _, err := r.readW(ctx, watch, true)
	return v, err
}

func (r *reader) readW(ctx context.Context, watch, armOffice bool) (View, watches, error) {
	return r.readGuess(ctx, watch, armOffice, "", false)
}

// readGuess is readW that also reads the node guess (the likely new owner)
// beside the listing, so a handover costs one round trip, not two. When
// officeNow says the office is known to exist (its watch just fired), it
// is read beside the listing too.
func (r *reader) readGuess(ctx context.Context, watch, armOffice bool, guess string, officeNow bool) (View, watches, error) {
	var w watches
	var early *officeRead
	if officeNow {
		early = r.startOffice(ctx, watch && armOffice)
		armOffice = false
	}
	g := r.startGuess(ctx, guess, watch && !r.noOwnerWatch)
	defer g.wait() // never outlive the read
	for {
		got, err := r.listW(ctx, watch)
		if err == nil {
			r.sameGroup(got)
		}
		if err != nil || got.missing {
			early.wait()
			v := View{Group: r.group, Recipe: r.recipe}
			if err == nil {
				w.exists = got.exists
				if r.ownerBefore {
					v.Pzxid = r.goneAsOf(ctx)
				}
			}
			return v, w, err
		}
		w.children = got.ch
		v := View{Group: r.group, Exists: true, Cversion: got.stat.Cversion, Pzxid: got.stat.Pzxid, children: got.children, mzxid: got.stat.Mzxid, version: got.stat.Version, groupCzxid: got.stat.Czxid}
		v.Recipe = r.recipeOf(ctx, got.children)
		office := early
		if office == nil && contains(got.children, OfficeNode) {
			office = r.startOffice(ctx, watch && armOffice)
		}
		early = nil
		done, err := r.fillQueue(ctx, &v, g, watch)
		if err != nil {
			office.wait()
			return View{}, w, err
		}
		if !done {
			// The owner left between the listing and its read: list again,
			// keeping an office watch that was armed.
			if watch {
				w.children = nil
			}
			if office.wait(); office != nil && office.ch != nil {
				w.office, armOffice = office.ch, false
			}
			continue
		}
		w.owner = r.ownerW
		before := r.rel
		if err := r.readRelease(ctx, &v); err != nil {
			office.wait()
			return View{}, w, err
		}
		if office != nil {
			office.wait()
			if office.err != nil && !errors.Is(office.err, zk.ErrNoNode) {
				return View{}, w, office.err
			}
			v.Office, v.OfficeZxid, w.office = office.o, office.mzxid, office.ch
		}
		if err := r.readUnrecordedEnd(ctx, &v, before); err != nil {
			return View{}, w, err
		}
		return v, w, nil
	}
}

// listing is one read of a group's children.
type listing struct {
	children []string
	stat     *zk.Stat
	ch       <-chan zk.Event
	// missing: the group does not exist; exists is the watch for its
	// creation.
	missing bool
	exists  <-chan zk.Event
}

// listW lists the group's children, with a children watch when watch is
// set, or an exists watch when the group is missing.
func (r *reader) listW(ctx context.Context, watch bool) (listing, error) {
	for {
		got, err := call(ctx, func() (listing, error) {
			if watch {
				c, st, ch, err := r.conn.ChildrenW(r.group)
				return listing{children: c, stat: st, ch: ch}, err
			}
			c, st, err := r.conn.Children(r.group)
			return listing{children: c, stat: st}, err
		})
		if err == nil && got.stat != nil && got.stat.EphemeralOwner != 0 {
			return listing{}, fmt.Errorf("%w: %s is an ephemeral node, which holds no queue: a single-node leader (such as Kafka's /controller) or a queue node; observe a leader node as one (bridge --leader %s, or a --preset)", ErrNotAGroup, r.group, r.group)
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return got, unlistable(r.group, err)
		}
		if !watch {
			return listing{missing: true}, nil
		}
		ok, _, ch, err := existsW(ctx, r.conn, r.group)
		if err != nil || !ok {
			return listing{missing: true, exists: ch}, err
		}
		// created meanwhile: list again
	}
}

// goneAsOf is, for a group that does not exist, the zxid as of which that
// is known: its parent's last child change (its deletion, or later), so
// that every owner created before is known gone. 0 when the parent cannot
// be read either.
func (r *reader) goneAsOf(ctx context.Context) int64 {
	st, err := call(ctx, func() (*zk.Stat, error) {
		_, st, err := r.conn.Exists(path.Dir(r.group))
		return st, err
	})
	if err != nil || st == nil {
		return 0
	}
	return st.Pzxid
}

// fillQueue reads the owner's details (and, for a one-shot read, every
// node's) into v. done is false when the owner left before its read. The
// owner is the lowest node that is not suspect (see suspicion).
func (r *reader) fillQueue(ctx context.Context, v *View, g *guessRead, watch bool) (bool, error) {
	es := parseChildren(v.children, v.Cversion)
	owner, blocker := -1, -1
	for i, e := range es {
		p := participantFromName(e)
		if s, ok := r.suspects[e.name]; ok {
			p.Suspect, p.Czxid = s.why, s.czxid
		}
		notSeq := noSequence(e.name)
		if p.Suspect == "" {
			p.Suspect = notSeq
		}
		switch {
		case owner < 0 && blocker < 0 && p.Suspect == "":
			g.adopt(r, e.name)
			d, err := r.ownerDetails(ctx, e, watch)
			switch {
			case errors.Is(err, zk.ErrNoNode):
				return false, nil
			case errors.Is(err, zk.ErrNoAuth):
				// Its ACL hides the owner from us: what its name says is all
				// we know, and the children watch still sees it go.
				owner = len(v.Queue)
				v.Queue = append(v.Queue, p)
				continue
			case err != nil:
				return false, err
			}
			p = d
			p.Suspect = r.suspicion(p, v.children)
			if p.Suspect == "" && r.lastOwner == nil && i+1 < len(es) {
				if p.Suspect, err = r.youngerThanNext(ctx, p, es[i+1]); err != nil {
					return false, err
				}
			}
			if p.Suspect != "" {
				r.owner, r.ownerW = nil, nil
			} else if blocker = olderSuspect(v.Queue, p); blocker >= 0 {
				r.owner, r.ownerW = nil, nil
			} else {
				owner = len(v.Queue)
			}
		case r.everyID:
			d, _, err := r.details(ctx, e, false)
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return false, err
			}
			if err == nil {
				p = d
				p.Suspect = cmp.Or(r.suspicion(p, v.children), notSeq)
			}
		}
		v.Queue = append(v.Queue, p)
	}
	var err error
	if v.Hazard, v.HazardNode, err = r.hazardOf(ctx, es, v.children, v.Queue); err != nil {
		return false, err
	}
	r.forget(es)
	if owner < 0 && blocker < 0 && len(v.Queue) > 0 && noSequence(v.Queue[0].Node) == "" {
		blocker = 0 // only suspects: whoever joins next waits behind the lowest
	}
	if blocker >= 0 {
		v.Blocked = &v.Queue[blocker]
	}
	if owner >= 0 {
		v.Owner = &v.Queue[owner]
		r.lastOwner = &entry{name: v.Owner.Node, seq: v.Owner.Sequence}
	} else {
		r.owner, r.ownerW = nil, nil
	}
	return true, nil
}

// suspicion says why p cannot be a participant as the queue (children)
// shows it, "" when it can; the verdict is kept while the node exists. A node that is
// not ephemeral belongs to no session: no participant holds it, and it
// never goes by itself. A node below the owner that was not there before
// was not made by a sequential create (those only grow): someone created
// it under a chosen name.
func (r *reader) suspicion(p Participant, children []string) string {
	if s, ok := r.suspects[p.Node]; ok {
		return s.why
	}
	why, noSession := "", p.Session == 0
	switch {
	case noSession:
		why = "not ephemeral: no session holds it and it never goes away by itself; someone created it by hand"
	case r.lastOwner != nil && p.Node != r.lastOwner.name && SeqLess(p.Sequence, r.lastOwner.seq) && contains(children, r.lastOwner.name) && !contains(r.lastChildren, p.Node):
		why = "appeared below the owner " + r.lastOwner.name + ": a sequential create never sorts below an existing node; someone created it under a chosen name"
	}
	if why != "" {
		if r.suspects == nil {
			r.suspects = map[string]suspectNode{}
		}
		r.suspects[p.Node] = suspectNode{why: why, czxid: p.Czxid, noSession: noSession}
	}
	return why
}

// noSequence says why a node whose name ends in more than ten digits is
// no queue node, "" for any other: ZooKeeper appends exactly ten
// characters to a sequential node's name, so the last ten of a longer run
// are part of a number the name was given, not a sequence. HBase names its
// region servers and backup masters "host,port,startcode" with a start
// code in milliseconds: /hbase/rs read as a queue had a region server for
// its owner. Only observers judge so; participants still queue behind
// any name ending in a sequence, whoever made it.
func noSequence(name string) string {
	n := len(name) - len(strings.TrimRight(name, "0123456789"))
	if n <= 10 {
		return ""
	}
	return fmt.Sprintf("its name ends in %d digits, more than the ten ZooKeeper appends: no sequential create made it; a registration (as HBase's host,port,startcode) or a name chosen by hand, not a queue node", n)
}

// youngerThanNext is suspicion without a last read to compare with (a
// first snapshot, a one-shot read): sequential creates give a group's
// nodes their sequences in the order of their czxids, so a node younger
// than the participant that sorts after it was created under a chosen
// name, after that one (which may have owned since). Its verdict is kept like
// suspicion's; "" when next is gone or older.
func (r *reader) youngerThanNext(ctx context.Context, p Participant, next entry) (string, error) {
	st, err := call(ctx, func() (*zk.Stat, error) {
		_, st, err := r.conn.Exists(r.group + "/" + next.name)
		return st, err
	})
	// A next node no session holds is no participant: it, not p, is the
	// odd one (a leftover, a restore's copy), and suspect itself.
	if err != nil || st == nil || st.Czxid == 0 || st.EphemeralOwner == 0 || st.Czxid >= p.Czxid {
		return "", err
	}
	why := "younger than " + next.name + ", which sorts after it: a sequential create never sorts below an existing node; someone created it under a chosen name"
	if r.suspects == nil {
		r.suspects = map[string]suspectNode{}
	}
	r.suspects[p.Node] = suspectNode{why: why, czxid: p.Czxid}
	return why, nil
}

// suspectNode is the verdict on a suspect node and its czxid, kept while
// the node exists.
type suspectNode struct {
	why       string
	czxid     int64
	noSession bool
}

// hazardOf is hazardBy over the queue's nodes that a session may hold: a
// node no session holds (made by hand) is no client, whatever its name
// says. The node a hazard names is read once to tell, and its verdict
// kept while it exists (clients, suspects); one found suspect is marked so
// in queue.
func (r *reader) hazardOf(ctx context.Context, es []entry, children []string, queue []Participant) (why, node string, err error) {
	if why, node = hazardBy(es); why == "" {
		return "", "", nil // fewer nodes make no hazard either: nothing to read
	}
	gone := map[string]bool{}
	for range len(es) + 1 { // each pass rules out one node
		live := slices.DeleteFunc(slices.Clone(es), func(e entry) bool { return gone[e.name] || r.suspects[e.name].noSession })
		why, node = hazardBy(live)
		if why == "" || r.clients[node] {
			return why, node, nil
		}
		i := slices.IndexFunc(es, func(e entry) bool { return e.name == node })
		p, _, err := r.details(ctx, es[i], false)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			gone[node] = true // left since the listing; the next one shows it
			continue
		case err != nil:
			return "", "", err
		case p.Session != 0:
			if r.clients == nil {
				r.clients = map[string]bool{}
			}
			r.clients[node] = true
			return why, node, nil
		}
		verdict := r.suspicion(p, children)
		if i := slices.IndexFunc(queue, func(q Participant) bool { return q.Node == node }); i >= 0 {
			queue[i].Suspect = verdict
		}
	}
	return why, node, nil
}

// olderSuspect returns the index in below (the nodes that sort below p) of
// the first suspect node created before p, or -1. Every recipe lists its
// group after creating its node, so p's listing showed that node below it:
// p waits for its deletion, whatever the node's name claims. A suspect
// created after p (a name chosen to sort below it) may have come after p
// already owned, and is not taken to hold p up.
func olderSuspect(below []Participant, p Participant) int {
	for i, s := range below {
		if s.Suspect != "" && s.Czxid != 0 && p.Czxid != 0 && s.Czxid < p.Czxid {
			return i
		}
	}
	return -1
}

// forget drops the verdicts on nodes that are gone, and remembers the
// listing for the next read's "was it there before".
// sameGroup forgets what the reader keeps by node name (the owner's
// details and watch, the last owner and children, suspicions, the mark's
// last state) when the group node is not the one it was kept for: the
// group was deleted, and perhaps made again with the same names.
func (r *reader) sameGroup(got listing) {
	var czxid int64
	if !got.missing && got.stat != nil {
		czxid = got.stat.Czxid
	}
	if czxid == r.groupCzxid {
		return
	}
	if r.groupCzxid != 0 {
		r.owner, r.ownerW, r.lastOwner, r.lastChildren, r.suspects, r.clients = nil, nil, nil, nil, nil, nil
		r.lastMzxid, r.lastVersion, r.rel = 0, 0, releaseBase{}
	}
	r.groupCzxid = czxid
}

func (r *reader) forget(es []entry) {
	r.lastChildren = r.lastChildren[:0]
	for _, e := range es {
		r.lastChildren = append(r.lastChildren, e.name)
	}
	for n := range r.suspects {
		if !contains(r.lastChildren, n) {
			delete(r.suspects, n)
		}
	}
	for n := range r.clients {
		if !contains(r.lastChildren, n) {
			delete(r.clients, n)
		}
	}
}

// guessRead is a read of the likely next owner running beside a listing.
type guessRead struct {
	name string
	done chan struct{}
	p    Participant
	ch   <-chan zk.Event
	err  error
}

func (r *reader) startGuess(ctx context.Context, name string, watch bool) *guessRead {
	if name == "" {
		return nil
	}
	g := &guessRead{name: name, done: make(chan struct{})}
	go func() {
		defer close(g.done)
		seq, _ := ParseSequence(name)
		g.p, g.ch, g.err = r.details(ctx, entry{name: name, seq: seq}, watch)
	}()
	return g
}

// adopt makes the guessed read the owner's when the listing shows the
// guess owns.
func (g *guessRead) adopt(r *reader, owner string) {
	if g == nil || g.name != owner {
		return
	}
	<-g.done
	if g.err == nil {
		r.owner, r.ownerW = &g.p, g.ch
	}
	g.name = ""
}

func (g *guessRead) wait() {
	if g != nil {
		<-g.done
	}
}

// recipeOf says what the group holds: the recipe given, else the one
// herald's own names carry, else the documented rule for the first name
// that tells (see RecipeOfName), else what herald wrote on the group node
// when it created it. Once known it is kept: an emptied lock stays a lock,
// also for a later observation that knows what an earlier one saw
// (reader.hint). A group that nothing tells about reads as an election.
func (r *reader) recipeOf(ctx context.Context, children []string) Recipe {
	if r.recipe != "" {
		return r.recipe
	}
	if rec, ok := recipeOfNames(children); ok {
		r.recipe = rec
		return rec
	}
	if !r.askedGroup {
		r.askedGroup = true
		if rec, ok := readGroupRecipe(ctx, r.conn, r.group); ok {
			r.recipe = rec
			return rec
		}
	}
	if r.hint != "" {
		return r.hint
	}
	return RecipeElection
}

// officeRead is a read of the office running beside the owner's read.
type officeRead struct {
	done  chan struct{}
	o     *Office
	mzxid int64
	ch    <-chan zk.Event
	err   error
}

// wait waits for the read to end; a nil read has nothing to wait for.
func (or *officeRead) wait() {
	if or != nil {
		<-or.done
	}
}

func (r *reader) startOffice(ctx context.Context, watch bool) *officeRead {
	or := &officeRead{done: make(chan struct{})}
	go func() {
		defer close(or.done)
		or.o, or.mzxid, or.ch, or.err = r.readOffice(ctx, watch)
	}()
	return or
}

// ownerDetails returns the owner's details, read once per owner: a node's
// creator and id do not change while it exists, whoever writes its data
// later. A watch that fired on such a write is set again.
func (r *reader) ownerDetails(ctx context.Context, e entry, watch bool) (Participant, error) {
	watch = watch && !r.noOwnerWatch
	if r.owner != nil && r.owner.Node == e.name {
		if watch && r.ownerW == nil {
			_, ch, err := r.details(ctx, e, true)
			if err != nil {
				return Participant{}, err
			}
			r.ownerW = ch
		}
		return *r.owner, nil
	}
	p, ch, err := r.details(ctx, e, watch)
	if err != nil {
		return Participant{}, err
	}
	r.owner, r.ownerW = &p, ch
	return p, nil
}

// details reads a node's data (the participant id) and stat (session,
// term); with watch it also arms a data watch on the node.
func (r *reader) details(ctx context.Context, e entry, watch bool) (Participant, <-chan zk.Event, error) {
	type res struct {
		data []byte
		st   *zk.Stat
		ch   <-chan zk.Event
	}
	got, err := call(ctx, func() (res, error) {
		if watch {
			d, st, ch, err := r.conn.GetW(r.group + "/" + e.name)
			return res{d, st, ch}, err
		}
		d, st, err := r.conn.Get(r.group + "/" + e.name)
		return res{d, st, nil}, err
	})
	if errors.Is(err, zk.ErrNoAuth) {
		// Its ACL hides the node's data (the id) from us. Its stat says
		// what matters more, the session that holds it and its term, and
		// exists needs no READ (before ZooKeeper 3.9).
		st, xerr := call(ctx, func() (*zk.Stat, error) {
			ok, st, err := r.conn.Exists(r.group + "/" + e.name)
			if err == nil && !ok {
				return nil, zk.ErrNoNode
			}
			return st, err
		})
		if xerr != nil && !errors.Is(xerr, zk.ErrNoAuth) {
			return Participant{}, nil, xerr
		}
		if xerr == nil {
			got.st, err = st, nil
		}
	}
	if err != nil {
		return Participant{}, nil, err
	}
	p := participantFromName(e)
	if id := idFromData(r.group+"/"+e.name, got.data); id != "" {
		p.ID = id
	}
	p.Session = got.st.EphemeralOwner
	p.Czxid = got.st.Czxid
	return p, got.ch, nil
}

func (r *reader) readOffice(ctx context.Context, watch bool) (*Office, int64, <-chan zk.Event, error) {
	type res struct {
		data []byte
		st   *zk.Stat
		ch   <-chan zk.Event
	}
	got, err := call(ctx, func() (res, error) {
		if watch {
			d, st, ch, err := r.conn.GetW(r.group + "/" + OfficeNode)
			return res{d, st, ch}, err
		}
		d, st, err := r.conn.Get(r.group + "/" + OfficeNode)
		return res{d, st, nil}, err
	})
	if err != nil {
		return nil, 0, nil, err
	}
	o, ok := decodeOffice(got.data, got.st)
	if !ok {
		return nil, got.st.Mzxid, got.ch, nil
	}
	return &o, got.st.Mzxid, got.ch, nil
}

// participantFromName is what a node's name says: its id and sequence. The
// session a name claims is not kept: only the node's ephemeralOwner says
// which session holds it. A protected name (Curator's, go-zookeeper's)
// says no more than its recipe's lock name ("latch", "lock"), which is no
// id: every client of the group has it, and a LeaderLatch holding no id
// passed ownership from "latch" to "latch"; the id is then the node's name
// (Participant.String shows it once).
func participantFromName(e entry) Participant {
	info, _ := ParseName(e.name)
	id := info.ID
	if info.Convention == "curator" || info.Convention == "go-zookeeper" {
		id = e.name
	}
	return Participant{ID: id, Node: e.name, Sequence: e.seq}
}

// idFromData is the participant id a node's data gives: short text as
// herald, Curator and Kazoo store it, or what a system's own format says
// (Mesos' MasterInfo JSON in json.info_ nodes); "" when it gives none.
func idFromData(nodePath string, data []byte) string {
	if ident.ForPath(nodePath) == ident.Mesos {
		if id, err := ident.Decode(ident.Mesos, nodePath, data); err == nil {
			return id.ID
		}
	}
	if id := strings.TrimSpace(string(data)); id != "" && isText(id) {
		return id
	}
	return ""
}

func isText(s string) bool {
	if len(s) > 256 {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0xfffd {
			return false
		}
	}
	return true
}

// recipeOfNames reads a group's recipe from its queue nodes' names:
// herald's names carry it, and win over the rule for other names.
func recipeOfNames(children []string) (Recipe, bool) {
	var byRule Recipe
	for _, c := range children {
		info, ok := ParseName(c)
		switch {
		case !ok || info.Recipe == "":
		case info.Convention == "herald":
			return info.Recipe, true
		case byRule == "":
			byRule = info.Recipe
		}
	}
	return byRule, byRule != ""
}

// ObserveOption configures Observe.
type ObserveOption func(*observeOptions) error

type observeOptions struct {
	recipe Recipe
	rules  RecipeRules
	buffer int
	since  *View
	// after is what a previous observer last reported, when only that is
	// known (AfterOwner).
	after *View
	// reportEpoch is the epoch that report carried (ReportEpoch), nil
	// when it carried none.
	reportEpoch *int64
}

// AfterOwner continues an observation of which only the last report is
// known: the owner node ("" for none) as of zxid. That is what a bridge
// restarted on the same audit log knows. The first Snapshot says Gap
// unless the same owner still holds or the group's children have not
// changed since zxid: nothing else can prove who owned in between.
func AfterOwner(node string, zxid int64) ObserveOption {
	return func(o *observeOptions) error {
		v := View{Exists: true, Pzxid: zxid, ownerOnly: true}
		if node != "" {
			v.Owner = &Participant{Node: node}
		}
		o.after = &v
		return nil
	}
}

// AfterReport is AfterOwner for a report that also says what the group
// held (its recipe): a group nothing tells about any more (an emptied
// lock of a client whose names do not say) keeps that recipe.
func AfterReport(node string, zxid int64, recipe Recipe) ObserveOption {
	return func(o *observeOptions) error {
		if err := AfterOwner(node, zxid)(o); err != nil {
			return err
		}
		if recipe.Known() {
			o.after.Recipe = recipe
		}
		return nil
	}
}

// ReportEpoch adds to AfterOwner or AfterReport the system's leadership
// epoch the last report carried (publish.Event.Epoch), for a single-node
// leader with an EpochPath (Kafka's /controller_epoch). The first Snapshot
// then counts the elections since that report by the epoch, as a running
// observer does: one election that brought the owner it names is no gap,
// although the parent's children changed. Without it, or when the epoch
// cannot be read now, any other owner since the report's zxid is a gap.
// Observers of groups, and single-node leaders without an EpochPath,
// ignore it.
func ReportEpoch(epoch int64) ObserveOption {
	return func(o *observeOptions) error {
		if epoch < 0 {
			return fmt.Errorf("elect: negative epoch %d", epoch)
		}
		o.reportEpoch = &epoch
		return nil
	}
}

// Since continues an earlier observation of the group (one that ended with
// its session, say): the first Snapshot is measured against v, the last
// view that observation had (Observer.Last), and says Gap when an owner may
// have come and gone in between. A single-node leader's view keeps its
// epoch, which then counts the elections in between exactly.
func Since(v View) ObserveOption {
	return func(o *observeOptions) error {
		o.since = &v
		return nil
	}
}

// AsRecipe says whether the group is an election or a lock (by default it
// is guessed from the node names: "lock" in them means a lock).
func AsRecipe(r Recipe) ObserveOption {
	return func(o *observeOptions) error {
		if !r.Known() {
			return fmt.Errorf("elect: unknown recipe %q (want election or lock)", r)
		}
		o.recipe = r
		return nil
	}
}

// Buffer sets the changes channel's buffer (default 64). The observer never
// drops a change: when the buffer is full it waits, and ZooKeeper's one-shot
// watch means the next listing catches up (reported with Gap when owners
// may have been missed).
func Buffer(n int) ObserveOption {
	return func(o *observeOptions) error {
		if n < 0 {
			return fmt.Errorf("elect: negative buffer %d", n)
		}
		o.buffer = n
		return nil
	}
}

// Observer streams the changes of one group.
type Observer struct {
	ch   chan Change
	mu   sync.Mutex
	err  error
	last *View
	done chan struct{}
}

// Last is the latest view the observer emitted changes for (false before
// the first). Give it to Since when observing the group again.
func (o *Observer) Last() (View, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last == nil {
		return View{}, false
	}
	return *o.last, true
}

// Changes is closed when the observer stops; Err says why.
func (o *Observer) Changes() <-chan Change { return o.ch }

// Err is nil while running, ctx.Err() after cancel, ErrSessionLost when the
// session expired (observe again on a new session).
func (o *Observer) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// Wait blocks until the observer has stopped.
func (o *Observer) Wait() { <-o.done }

// readRelease reads the release herald's mark on the group node records,
// when the mark changed since the last read and the listings alone cannot
// tell what it says. When it was written once, in the very transaction of
// the last child change, that transaction was an owner's resignation or
// release (see groupMark), and no read is needed; so too when the last
// owner is the only node that went. A mark written twice records another
// reason, and is read.
func (r *reader) readRelease(ctx context.Context, v *View) error {
	changed := r.lastMzxid != 0 && v.mzxid > r.lastMzxid
	once := v.version == r.lastVersion+1
	before := r.rel
	r.lastMzxid, r.lastVersion = v.mzxid, v.version
	r.rel = releaseBase{children: v.children, cversion: v.Cversion}
	if v.Owner != nil {
		r.rel.owner = v.Owner.Node
	}
	switch {
	case !changed:
		return nil
	case once && v.mzxid == v.Pzxid:
		v.markedOnce = true
		return nil
	case once:
		if by := before.onlyRelease(*v); by != "" {
			v.markedBy = by
			return nil
		}
	}
	b, _, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return r.conn.Get(r.group) })
	switch {
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNoAuth):
		v.markUnread = true
		return nil
	case err != nil:
		return err
	}
	v.released = decodeMarkRelease(b)
	return nil
}

// readUnrecordedEnd tells why a node the last read showed went (the
// owner, or a waiter), when its deletion is the only change to the
// group's children since and nothing in the group records why: herald
// run and herald lock keep a session node (ProveSessionEnd), which tells
// it in most cases. Two reads, for such an end only (the note's data,
// which needs READ, only where herald noted the end):
//
//   - The session node is gone, and the node that held it had its last
//     child change in the very transaction of the group's (their pzxid are
//     equal): the servers delete every ephemeral node of a session that
//     ends in one transaction, while any deletion by a client deletes
//     nodes one by one. Its session ended: "session ended".
//   - The session node is there, of the node's session, and was written
//     in the very transaction of the node's deletion: herald deleted its
//     own node where neither the mark nor an office could take the
//     reason, and the session node took it (see sessionNote).
//   - The session node is there, of the node's session, and untouched
//     since before the deletion: the session lived, and every deletion
//     herald makes of its own node records its reason somewhere; so
//     someone else deleted it (by hand, a tool): "deleted".
//
// Any change since under either node, a session node written after the
// deletion, or a session node that is not of the node's session, leaves
// the end unknown, as it is for clients that keep none.
func (r *reader) readUnrecordedEnd(ctx context.Context, v *View, before releaseBase) error {
	gone := before.onlyGone(*v)
	switch {
	case gone == "":
		return nil // not one node's end alone
	case v.markedOnce || v.markedBy == gone || v.released != nil && v.released.Node == gone,
		v.Office != nil && v.Office.Released != nil && v.Office.Released.Node == gone:
		return nil // a release says why
	case v.markUnread || v.OfficeUnreadable():
		return nil // a release may say why, unread
	}
	// A participant given another session root (SessionNodesUnder) keeps
	// its node there, which readers do not know: they find none.
	node := sessionNodeUnder(r.group, gone, DefaultSessionRoot)
	if node == "" {
		return nil
	}
	id, _, _ := heraldNode(gone)
	// The stat first: it needs no permission, where the note's data
	// needs READ, and only an end herald noted needs the data.
	there, st, err := call2(ctx, func() (bool, *zk.Stat, error) { return r.conn.Exists(node) })
	switch {
	case err != nil:
		return err
	case !there:
		there, st, err := call2(ctx, func() (bool, *zk.Stat, error) { return r.conn.Exists(path.Dir(node)) })
		if err == nil && there && st.Pzxid == v.Pzxid {
			v.endedNode, v.endedWhy = gone, ReasonSessionEnded
		}
		return err
	case st.EphemeralOwner != id.session:
		return nil // not the owner's session's node
	case st.Mzxid < v.Pzxid && st.DataLength == 0:
		return nil // an older herald's, which noted nothing: it may have deleted its node itself
	case st.Mzxid < v.Pzxid:
		v.endedNode, v.endedWhy = gone, ReasonDeleted
		return nil
	case st.Mzxid > v.Pzxid:
		return nil // written since: what it says now is another deletion's
	}
	b, st, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return r.conn.Get(node) })
	switch {
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNoAuth):
		return nil
	case err != nil:
		return err
	}
	if n, ok := decodeSessionNote(b, r.group, gone); ok && st.Mzxid == v.Pzxid {
		v.endedNode, v.endedWhy = gone, n.Reason
	}
	return nil
}

// releaseBase is what the last read showed, to account for a release
// recorded since without reading it.
type releaseBase struct {
	children []string
	cversion int32
	owner    string
}

// onlyGone is the child the last read showed that v no longer holds,
// when its deletion is the only change to the group's children since
// (one cversion, one child fewer); "" otherwise.
func (b releaseBase) onlyGone(v View) string {
	if b.children == nil || v.Cversion != b.cversion+1 || len(v.children) != len(b.children)-1 {
		return ""
	}
	for _, c := range b.children {
		if !contains(v.children, c) {
			return c
		}
	}
	return ""
}

// onlyRelease names the owner whose release the group's mark must record,
// "" when the reads cannot tell: the mark is written only in the
// transaction that deletes a releasing owner's node, so when every child
// change since is explained by the two listings, the last owner is the
// only queue node gone, and its session queued again (the owner that
// resigns and campaigns again at once), the mark is its release. Without
// the last condition, someone else's write to the group node followed by
// the owner's session ending would pass for a release; a session that
// ended cannot queue again.
func (b releaseBase) onlyRelease(v View) string {
	if b.owner == "" || b.children == nil {
		return ""
	}
	seen := setDiff(b.children, v.children) + setDiff(v.children, b.children)
	if int64(v.Cversion-b.cversion) != int64(seen) {
		return ""
	}
	gone := ""
	for _, c := range b.children {
		if _, ok := ParseSequence(c); ok && !contains(v.children, c) {
			if gone != "" {
				return ""
			}
			gone = c
		}
	}
	if gone != b.owner {
		return ""
	}
	was, ok := ParseName(gone)
	if !ok || was.Session == 0 {
		return ""
	}
	for _, c := range v.children {
		if contains(b.children, c) {
			continue
		}
		if info, ok := ParseName(c); ok && info.Session == was.Session {
			return gone
		}
	}
	return ""
}

// hadOwner reports whether an earlier view had an owner.
func hadOwner(v *View) bool { return v != nil && v.Owner != nil }

// hintOf is the recipe an earlier view knew, "" for none.
func hintOf(v *View) Recipe {
	if v == nil {
		return ""
	}
	return v.Recipe
}
