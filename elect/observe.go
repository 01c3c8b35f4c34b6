package elect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"sort"

	"github.com/go-zookeeper/zk"
)

// View is the state of a group at one moment. A View, and the Change
// that carries it, share their Owner and Queue with the observer, which
// keeps one copy a group (it adds up over 100,000 groups): read them, and
// copy before changing any of it.
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
	// The fields below are herald's own. Every group of an ObserveMany
	// keeps its last View, so the small ones sit together at the end,
	// where they cost no padding, and moments are unix ns.
	//
	// children are all child names, queue or not (to account for cversion).
	children []string
	// mzxid is the group node's data zxid (a single-node leader's: its
	// leader node's, see kraftTerm); released is the release its mark
	// records, when it had to be read (see readRelease).
	mzxid    int64
	released *Release
	// parentCzxid is the zxid that made the group's parent, with parentCv
	// its child version, when known (parentKnown): for a missing group,
	// read before it was found missing; for one found again after that,
	// read after its listing. A single-node leader's view keeps its
	// parent's czxid too, 0 when not known (see missedSingle).
	parentCzxid int64
	// groupCzxid is the zxid that created the group node: a group deleted
	// and made again may reuse its old children's names (sequences start
	// again at 0), so names are compared only within one group node.
	groupCzxid int64
	// ends says whose end this read's listings or a session node tell,
	// nil for none (see viewEnds).
	ends *viewEnds
	// heldAsOf, on the last view before a stretch not seen (a lost
	// connection), is the newest moment ZooKeeper vouched for it, in unix
	// ns (see unixNs): Owner still held after it (see Session.Answered).
	// 0 when unknown.
	heldAsOf int64
	// epoch is a single-node leader's epoch (SingleView.Epoch), nil when
	// not known: kept so that an observation continued from this view
	// (Since, or a report's ReportEpoch) counts the elections in between
	// exactly, as the observer that read it would have.
	epoch *viewEpoch
	// version is the group node's data version; markedOnce says the mark
	// was written once since the last read, in the very transaction of the
	// last child change: a resignation or release (see readRelease).
	version  int32
	parentCv int32
	// ownerOnly: only the owner is known (see AfterOwner).
	ownerOnly  bool
	markedOnce bool
	// markUnread says the mark changed but could not be read.
	markUnread  bool
	parentKnown bool
	// anchorUp: parentCv and parentCzxid are those of the ancestor
	// anchorUp levels above the parent, the nearest that existed when
	// the group was found missing (0: the parent); chainOnce, of a group
	// found again, says each level below that ancestor, down to the
	// parent, holds the one child it was ever given (see madeOnce).
	anchorUp  uint8
	chainOnce bool
	// emptyCounted: the group was listed empty, then its parent's child
	// version read into parentCv (parentKnown) before the group was found
	// still the same node; goneQuiet, of a group missing, says the
	// children watch the last read set fired first for its deletion
	// (see deletedUnseen).
	emptyCounted, goneQuiet bool
	// recipeGuessed: nothing told the recipe (see RecipeGuessed).
	recipeGuessed bool
}

// viewEpoch is a single-node leader's epoch as a View keeps it: few
// groups have one, and every group of an ObserveMany keeps its last View,
// so it is a pointer there. Set once per read and never changed: copies
// of a View share it.
type viewEpoch struct {
	value int64
	// czxid is the epoch node's czxid read with value (0 without the
	// node, or from a report): see missedByEpoch.
	czxid int64
	// writes is the epoch node's data version read with value, when
	// writesKnown (not from a report): see missedByEpoch.
	writes      int32
	writesKnown bool
}

// viewEnds says whose end a read tells, beside a release on record: few
// reads find one, and every group of an ObserveMany keeps its last View,
// so it is a pointer there (48 bytes a View less). Set once per read and
// never changed: copies of a View share it.
type viewEnds struct {
	// markedBy is the owner the mark's release must be, when the listings
	// alone tell (see releaseBase.onlyRelease).
	markedBy string
	// endedNode is the node (the last owner, or a waiter) gone alone since
	// the last read without a release on record, and endedWhy why, as its
	// session node tells (see readUnrecordedEnd).
	endedNode string
	endedWhy  Reason
}

// markedBy is viewEnds.markedBy, "" when none.
func (v *View) markedBy() string {
	if v.ends == nil {
		return ""
	}
	return v.ends.markedBy
}

// ended is viewEnds.endedNode and endedWhy, "" when none.
func (v *View) ended() (string, Reason) {
	if v.ends == nil {
		return "", ""
	}
	return v.ends.endedNode, v.ends.endedWhy
}

// setEnded notes node gone for why (see viewEnds.endedNode).
func (v *View) setEnded(node string, why Reason) {
	e := viewEnds{endedNode: node, endedWhy: why}
	if v.ends != nil {
		e.markedBy = v.ends.markedBy
	}
	v.ends = &e
}

// RecipeGuessed reports whether Recipe is only herald's rule for a group
// that tells nothing of its recipe: no node name that says, no mark of
// herald's on the group node, no recipe given (AsRecipe) or known from an
// earlier observation. Such a group reads as an election; one that never
// held a queue node may be no group at all (a parent of groups).
func (v View) RecipeGuessed() bool { return v.recipeGuessed }

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
	return readGroup(ctx, s, group, true)
}

// readGroup is ReadGroup; every says whether to read every node's data
// and stat or, as observers do, only the owner's (and those of nodes
// below it that cannot be owners): the owner comes out the same.
func readGroup(ctx context.Context, s *Session, group string, every bool) (View, error) {
	if s == nil {
		return View{}, errNilSession
	}
	if err := ValidatePath(group); err != nil {
		return View{}, err
	}
	if err := catchUp(ctx, s, group); err != nil {
		return View{}, err
	}
	r := reader{conn: s.Conn(), group: group, everyID: every}
	v, err := r.read(ctx, false)
	if err == nil && !v.Exists {
		return v, fmt.Errorf("%w: %s", ErrNoParent, group)
	}
	if err == nil && v.Owner == nil {
		v.LastRelease = readMarkRelease(ctx, s.Conn(), group)
	}
	return v, err
}

// GroupRecipe says which recipe the group at group holds, as its
// children's names or herald's mark on the group node tell; known is false
// when neither does (an empty new group, nodes of no recipe's names). It
// reads none of the nodes, unlike ReadGroup: one listing, and a read of
// the group node when the names do not tell.
func GroupRecipe(ctx context.Context, s *Session, group string) (rec Recipe, known bool, err error) {
	if s == nil {
		return "", false, errNilSession
	}
	if err := ValidatePath(group); err != nil {
		return "", false, err
	}
	children, _, err := call2(ctx, func() ([]string, *zk.Stat, error) { return s.Conn().Children(group) })
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return "", false, fmt.Errorf("%w: %s", ErrNoParent, group)
	case err != nil:
		return "", false, err
	}
	if rec, ok := recipeOfNames(children); ok {
		return rec, true, nil
	}
	rec, known = readGroupRecipe(ctx, s.Conn(), group)
	return rec, known, nil
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
		// The loss itself stays matchable (connLoss): a fenced write whose
		// ownership check read the group reconnects and tries again, as
		// it does after any connection loss, where it failed at once.
		return fmt.Errorf("%w: catching up with the ZooKeeper leader before reading %s, the connection was lost (%w); a server cut off from the leader drops its clients: try again, or another server",
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
	if len(m.withdrawn()) > 0 && !m.accountedBefore(markCounter(m, st), false) {
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
	for _, r := range m.withdrawn() {
		es = append(es, entry{seq: r[0]}, entry{seq: r[1]})
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
	// Once a read is done it points at the owner in that read's queue
	// (see fillQueue), which the observer holds anyway, so a group keeps
	// its owner once.
	owner  *Participant
	ownerW <-chan zk.Event
	// listed, when set (kept beside the pointers: between the flags
	// below it cost every group 16 bytes),, is told when a listing that armed the children
	// watch came back: an event on the group's path heard before it
	// fired an older watch (ObserveMany, see Many.forgetHeard).
	listed func()
	// everyID reads every node's data and stat, not only the owner's (a
	// one-shot read for people; the observer reads only the owner's).
	everyID bool
	// noOwnerWatch reads the owner without a data watch: the children
	// watch alone tells when it goes (ObserveMany, where a watch per group
	// less is memory saved on both sides).
	noOwnerWatch bool
	// askedGroup: the group node's data was read for herald's recipe mark.
	askedGroup bool
	// sawMissing: the last read found the group missing, and its parent's
	// child version before (see madeOnce).
	sawMissing bool
	// missingUp is the last missing view's anchorUp.
	missingUp uint8
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
	// suspicion); lastOwner (its node's name, "" for none, and
	// lastOwnerSeq its sequence) and lastChildren are the last read's
	// owner and queue nodes, to tell a node that appeared below the
	// owner. The name is the queue's own string, not a copy.
	suspects map[string]suspectNode
	// clients are the nodes a hazard named that a session holds (see
	// hazardOf).
	clients map[string]bool
	// outside are the children outsideQueue names, and whether each is a
	// client's (see outsideHazard), kept while the node is listed.
	outside      map[string]bool
	lastOwner    string
	lastChildren []string
	// lastMzxid and lastVersion are the group node's data zxid and
	// version at the last read; rel is what that read showed, for
	// readRelease.
	lastMzxid    int64
	lastVersion  int32
	lastOwnerSeq int32
	rel          releaseBase
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
		if err != nil {
			early.wait()
			return View{Group: r.group, Recipe: r.recipe}, w, err
		}
		if got.missing {
			early.wait()
			return r.missingView(ctx, got, &w), w, nil
		}
		w.children = got.ch
		if r.listed != nil && got.ch != nil {
			r.listed()
		}
		v := r.listedView(ctx, got)
		if watch && !r.sawMissing && len(got.children) == 0 {
			r.countEmpty(ctx, &v)
		}
		v.Recipe, v.recipeGuessed = r.recipeOf(ctx, got.children)
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
		r.sawMissing = false
		return v, w, nil
	}
}

// missingView is the View of a group got found missing, whose creation
// w's exists watch tells.
func (r *reader) missingView(ctx context.Context, got listing, w *watches) View {
	v := View{Group: r.group, Recipe: r.recipe, parentCv: got.parentCv, parentCzxid: got.parentCzxid, parentKnown: got.parentKnown, anchorUp: got.anchorUp}
	w.exists = got.exists
	r.sawMissing, r.missingUp = got.parentKnown, got.anchorUp
	if r.ownerBefore {
		v.Pzxid = r.goneAsOf(ctx)
	}
	return v
}

// missingAt says whether since (an observation's view to continue from)
// found its group missing with a count of what was made at its path, and
// where that count was read: the first read of the group found again
// counts its making there (see madeOnce), where it was a gap.
func missingAt(since *View) (bool, uint8) {
	if since == nil || since.Exists || since.ownerOnly || !since.parentKnown {
		return false, 0
	}
	return true, since.anchorUp
}

// listedView is the View of the group's listing got, before its queue is
// read. For a group the last read found missing, it holds the child
// version of the parent (or of the ancestor that stood for it) read now,
// after the listing: it tells how many groups were made (and deleted) at
// the path meanwhile (see madeOnce).
func (r *reader) listedView(ctx context.Context, got listing) View {
	v := View{Group: r.group, Exists: true, Cversion: got.stat.Cversion, Pzxid: got.stat.Pzxid, children: got.children, mzxid: got.stat.Mzxid, version: got.stat.Version, groupCzxid: got.stat.Czxid}
	if r.sawMissing {
		v.anchorUp = r.missingUp
		v.parentCv, v.parentCzxid, v.parentKnown, v.chainOnce = r.groupAnchorAgain(ctx, r.missingUp)
	}
	return v
}

// countEmpty reads, for a group listed empty, its parent's child version
// and then the group again: still the same node, it was deleted after
// that version was read, if it is found missing (see deletedUnseen).
func (r *reader) countEmpty(ctx context.Context, v *View) {
	p := r.parentStat(ctx)
	if p == nil {
		return
	}
	g, there := r.groupStat(ctx)
	if there && g != nil && g.Czxid == v.groupCzxid {
		v.parentCv, v.parentCzxid, v.parentKnown, v.emptyCounted = p.Cversion, p.Czxid, true, true
	}
}

// groupStat reads the group node's stat; nil when it cannot be read, or
// (there false) does not exist.
func (r *reader) groupStat(ctx context.Context) (*zk.Stat, bool) {
	type stat struct {
		there bool
		st    *zk.Stat
	}
	got, err := call(ctx, func() (stat, error) {
		there, st, err := r.conn.Exists(r.group)
		return stat{there, st}, err
	})
	if err != nil {
		return nil, true
	}
	return got.st, got.there
}

// listing is one read of a group's children.
type listing struct {
	children []string
	stat     *zk.Stat
	ch       <-chan zk.Event
	// missing: the group does not exist; exists is the watch for its
	// creation. parentCv is its parent's child version, read before the
	// group was found missing (parentKnown); of its nearest ancestor
	// that exists, anchorUp levels above the parent, when that is missing.
	missing     bool
	exists      <-chan zk.Event
	parentCv    int32
	parentCzxid int64
	parentKnown bool
	anchorUp    uint8
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
		// The parent's child version first, then the proof the group is
		// missing: every group made at the path after that proof is
		// counted in the parent's child version read when the group is
		// found again (see madeOnce).
		cv, czxid, up, known := r.parentCversion(ctx)
		if !watch {
			return listing{missing: true, parentCv: cv, parentCzxid: czxid, parentKnown: known, anchorUp: up}, nil
		}
		ok, _, ch, err := existsW(ctx, r.conn, r.group)
		if err != nil || !ok {
			return listing{missing: true, exists: ch, parentCv: cv, parentCzxid: czxid, parentKnown: known, anchorUp: up}, err
		}
		// created meanwhile: list again
	}
}

// parentStat reads the stat of the group's parent; nil when it does not
// exist or cannot be read.
func (r *reader) parentStat(ctx context.Context) *zk.Stat {
	st, _ := statOf(ctx, r.conn, path.Dir(r.group))
	return st
}

// parentCversion is the child version of the group's parent and the zxid
// that made the parent (a parent made again counts from 0 again), and
// whether they could be read. A parent that does not exist has none: the
// client answers it with a stat of zeros, which read as the same parent,
// unchanged, across its making and deletion (found by a review). The
// nearest ancestor that exists, up levels above, stands for it then (see
// nearestThere).
func (r *reader) parentCversion(ctx context.Context) (cv int32, czxid int64, up uint8, known bool) {
	st, up, err := nearestThere(ctx, r.conn, path.Dir(r.group))
	if err != nil || st == nil {
		return 0, 0, 0, false // unreadable, or too far up to count
	}
	return st.Cversion, st.Czxid, up, true
}

// groupAnchorAgain reads, for a group found again after a look that found
// it missing, the child version and czxid of the ancestor that look
// counted at (up levels above the parent), and whether every level below
// it, down to the parent, was made once (see anchorAgain).
func (r *reader) groupAnchorAgain(ctx context.Context, up uint8) (cv int32, czxid int64, known, once bool) {
	st, once, err := anchorAgain(ctx, r.conn, path.Dir(r.group), up)
	if err != nil || st == nil {
		return 0, 0, false, false
	}
	return st.Cversion, st.Czxid, true, once
}

// goneAsOf is, for a group that does not exist, the zxid as of which that
// is known: its parent's last child change (its deletion, or later), so
// that every owner created before is known gone. 0 when the parent cannot
// be read either. It is read after the group was found missing, where
// parentCversion's read comes before.
func (r *reader) goneAsOf(ctx context.Context) int64 {
	st := r.parentStat(ctx)
	if st == nil {
		return 0
	}
	return st.Pzxid
}

// fillQueue reads the owner's details (and, for a one-shot read, every
// node's) into v. done is false when the owner left before its read. The
// owner is the lowest node that is not suspect (see suspicion).
func (r *reader) fillQueue(ctx context.Context, v *View, g *guessRead, watch bool) (bool, error) {
	es := parseChildren(v.children, v.Cversion)
	if err := r.remadeUnseen(ctx, v); err != nil {
		return false, err
	}
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
			if p.Suspect == "" && r.lastOwner == "" && i+1 < len(es) {
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
	if v.Hazard, v.HazardNode, err = r.hazardOf(ctx, es, v.children, v.Cversion, v.Queue); err != nil {
		return false, err
	}
	r.forget(es)
	if owner < 0 && blocker < 0 && len(v.Queue) > 0 && noSequence(v.Queue[0].Node) == "" {
		blocker = 0 // only suspects: whoever joins next waits behind the lowest
	}
	if blocker >= 0 {
		v.Blocked = &v.Queue[blocker]
	}
	r.keepOwner(v, owner)
	return true, nil
}

// keepOwner makes the queue's owner-th participant v's owner and the one
// the reader remembers; none when owner is negative.
func (r *reader) keepOwner(v *View, owner int) {
	if owner < 0 {
		r.owner, r.ownerW = nil, nil
		return
	}
	v.Owner = &v.Queue[owner]
	if r.owner != nil && *r.owner == *v.Owner {
		r.owner = v.Owner // the same details, held once (see reader.owner)
	}
	r.lastOwner, r.lastOwnerSeq = v.Owner.Node, v.Owner.Sequence
}
