package elect

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect/ident"
)

// Single-node leaders. Most systems that keep their leader in ZooKeeper
// do not queue: the winner creates one EPHEMERAL node at a known path
// (Kafka's /controller, HBase's /hbase/master, Hadoop's
// ActiveStandbyElectorLock, Solr's /overseer_elect/leader, Helix's
// CONTROLLER/LEADER, Pulsar's /loadbalance/leader) and the others watch it
// and try again when it goes. Such a node is observed as a group of its
// own whose owner is the node's creator:
//
//   - the group is the node's path; the owner's Node is the node's name
//     and its term, "<name>@<term>", so that every tenure has its own
//     event ids although the node's name never changes;
//   - the term is the zxid of the write that made the current owner: the
//     node's czxid, since these nodes are written once (a node whose data
//     is written again, as Kafka's persistent /controller during a
//     ZooKeeper-to-KRaft migration, has a new owner with every write);
//   - the owner's ID is read from the node's data by an ident decoder;
//     data that does not decode falls back to its generic form and is
//     reported (SingleNode.OnFallback), never an error;
//   - a system's own epoch (Kafka's /controller_epoch) is read beside the
//     node and kept in SingleView.Epoch; it tells exactly whether an
//     election went unseen. Without one, the parent's child counter does.

// SingleNode says how to read a single-node leader.
type SingleNode struct {
	// Format reads the owner's identity from the node's data; "" or
	// ident.Auto chooses by the path (ident.ForPath).
	Format ident.Format
	// EpochPath, when set, is a node holding the leadership's epoch as a
	// decimal number, written in the same transaction as the leader node
	// (Kafka's /controller_epoch).
	EpochPath string
	// OnFallback, when set, is called once per owner whose data did not
	// decode in Format (the owner's ID is then the generic form): count
	// it in a metric.
	OnFallback func(path string, err error)
	// OnNotLeader, when set, is called once per write of a node at the
	// path that is not taken for a leader's (SingleView.NotLeaderNode, why
	// says it): its events say no owner while a node, often naming one,
	// stands there, so log it.
	OnNotLeader func(path, why string)
}

// KRaftNote is what to know of a persistent /controller, which a KRaft
// controller writes during a ZooKeeper-to-KRaft migration: no session
// holds it, and once the migration is finalized nobody writes it again, so
// it names the migration's last KRaft controller for ever, and ZooKeeper
// holds nothing that says the migration ended.
const KRaftNote = "written by a KRaft controller during a migration to KRaft; not rewritten once the migration is finalized, " +
	"so it may name a past controller: ask the KRaft quorum (kafka-metadata-quorum.sh describe --status)"

// Note is what to know of the owner beyond its name, "" when nothing:
// KRaftNote for Kafka's persistent /controller (the one leader node no
// session holds that herald takes for a leader's, see NotLeaderNode).
// Without an owner, it says why a node that stands at the path is not
// taken for one: "no owner" alone read as if nothing were there.
func (sv SingleView) Note() string {
	if sv.Owner == nil && sv.NotLeaderNode != "" {
		return fmt.Sprintf("%s is not taken for a leader's node, so nobody holds it: %s", sv.Path, sv.NotLeaderNode)
	}
	var notes []string
	if sv.Owner != nil && sv.Owner.Session == 0 && sv.Identity.Format == ident.Kafka && sv.Identity.Fields["controller"] == "kraft" {
		notes = append(notes, KRaftNote)
	}
	if sv.Owner != nil && sv.DecodeErr != nil {
		notes = append(notes, sv.undecodedNote())
	}
	if sv.Owner != nil && sv.restartNote != "" {
		notes = append(notes, sv.restartNote)
	}
	if sv.EpochErr != "" {
		notes = append(notes, "its epoch is not known: "+sv.EpochErr)
	}
	return strings.Join(notes, "; ")
}

// undecodedNote says, of a leader node whose data does not decode as its
// system writes it, what the owner's name is then: without it, a
// consumer takes the raw text for the system's own name of its leader.
func (sv SingleView) undecodedNote() string {
	why := fmt.Sprintf("its data is not as its system writes it (%v)", sv.DecodeErr)
	switch {
	case !sv.Identity.Fallback:
		return why + ": rewritten by someone else than its system; the owner is the one it named before"
	case sv.Owner.ID == sv.Identity.ID && sv.Identity.Fields["encoding"] == "hex":
		return why + ": the id is that data, in hex (it is not text)"
	case sv.Owner.ID == sv.Identity.ID:
		return why + ": the id is that data, as text"
	}
	return why + ": the owner is named by its session"
}

// SingleNodeFor is how herald reads the node at p by default: the format
// its path suggests, and for Kafka's controller the epoch beside it.
func SingleNodeFor(p string) SingleNode {
	sn := SingleNode{Format: ident.Auto}
	if ident.ForPath(p) == ident.Kafka {
		sn.EpochPath = path.Join(path.Dir(p), "controller_epoch")
	}
	return sn
}

// SingleView is a single-node leader as read at one moment.
type SingleView struct {
	// Path is the leader node's path (the group).
	Path   string
	Recipe Recipe
	// Owner is the node's creator (nil when there is no node). Its
	// Session is 0 when the node is not ephemeral.
	Owner *Participant
	// Identity is the owner's identity as its system writes it;
	// DecodeErr says why it fell back to the generic form, if it did.
	Identity  ident.Identity
	DecodeErr error
	// Since is when the owner's node was written (its mtime).
	Since time.Time
	// Epoch is the system's epoch for this owner (SingleNode.EpochPath),
	// when EpochKnown: the epoch node was written with the owner's node.
	// Without an owner it is the last election's epoch (0 when the epoch
	// node does not exist: no election yet).
	Epoch      int64
	EpochKnown bool
	// epochWrites is the epoch node's data version, read with Epoch (0
	// without the node): how often it was written. Kafka writes it once
	// per election, so it moves with the epoch unless someone else wrote
	// it (see missedByEpoch).
	epochWrites int32
	// epochCzxid is the epoch node's czxid, read with Epoch (0 without
	// the node): a node made again counts from its start again.
	epochCzxid int64
	// EpochErr says why the epoch node's data, read with the owner's,
	// is no epoch ("" when it is, or there is none): written by someone
	// else than the system (an operator's set).
	EpochErr string
	// epochHidden: EpochErr says the epoch node's ACL hides it, which
	// no watch reports the end of (see recheckSingle).
	epochHidden bool
	// epochMissing: EpochErr says the epoch node does not exist under a
	// live owner; no watch is set on it either (see epochChanged).
	epochMissing bool
	// epochNoNumber: EpochErr says the epoch node holds no number, as
	// written at epochMzxid (see epochChanged).
	epochNoNumber bool
	epochMzxid    int64
	// ParentExists, Cversion and Pzxid are the parent's: whether it
	// exists, its child version and the zxid of its last child change.
	ParentExists bool
	Cversion     int32
	Pzxid        int64
	// parentCzxid is the parent's czxid (0 without it): a parent deleted
	// and made again between two reads restarts Cversion from 0.
	parentCzxid int64
	// Children is how many children the leader node has (a leader node
	// has none; a node that has some is a group, not a leader).
	Children int32
	// NotLeaderNode, when set, says why the node at Path, which exists, is not
	// taken for a leader's (Owner is then nil): a persistent node (no
	// session holds it) other than a KRaft controller's /controller, or a
	// node that has children. Systems write their leader node EPHEMERAL;
	// the one persistent leader herald knows, Kafka's /controller during
	// a ZooKeeper-to-KRaft migration, decodes with a KRaft epoch and has
	// no children. So a node made by hand or copied, Hadoop's
	// ActiveBreadCrumb (the last active node's record) and a group are
	// never published as a leader.
	NotLeaderNode string
	// consistent: the parent did not change while the node was read, so
	// Cversion accounts exactly for the node's state.
	consistent bool
	// dataZxid, nodeCzxid and dataVersion are the owner node's mzxid,
	// czxid and data version.
	dataZxid, nodeCzxid int64
	dataVersion         int32
	// restartNote says that the owner is the reported one, which a
	// first read cannot be sure of (see kraftTerm); "" when it can.
	restartNote string
	// restartGap: this read, the first after a restart, kept the
	// reported tenure though an election may have been missed since
	// (restartNote); the restatement is a gap. Not carried to later
	// reads, which see what happened since this one.
	restartGap bool
	// crumb is the czxid of the record a system keeps beside its leader
	// node (Hadoop's ActiveBreadCrumb), 0 when absent; crumbRead says the
	// reader looks for one.
	crumb     int64
	crumbRead bool
	// sibEpoch is the epoch node's czxid when it sits beside the leader
	// node (Kafka's /controller_epoch), 0 when absent; sibEpochRead says
	// it is such a node and was read (its ACL may hide it). Kafka makes it
	// again at the next election when it was deleted, which moves the
	// parent's child counter as a leader's create does.
	sibEpoch     int64
	sibEpochRead bool
	// gpCv and gpCzxid are the child version and czxid of the parent's
	// parent (gpKnown), or of its nearest ancestor that exists, gpUp
	// levels above it, read before the parent was proved missing, or after
	// a parent found again was read (see parentMadeOnce); a parent found
	// again under levels not each made once has none.
	gpCv    int32
	gpCzxid int64
	gpKnown bool
	gpUp    uint8
	// nodeQuiet: the leader node's watch set by the last read had not
	// fired when this read was answered (watch events come before the
	// answers after them), so no leader node was made in between. The
	// observation, which holds the watch, sets it (see parentGoneUnseen).
	nodeQuiet bool
}

// zxid dates what sv shows: the last change of the parent's children, or
// the owner node's last write when later (a node rewritten for each new
// owner: its new owner's term is that write, which the parent's counters
// do not see).
func (sv SingleView) zxid() int64 { return max(sv.Pzxid, sv.dataZxid) }

// view is the SingleView as the View an Observer keeps (Last): the
// parent's counters, the owner alone in the queue, and the epoch. Exists
// says whether the parent exists.
func (sv SingleView) view() View {
	v := View{Group: sv.Path, Recipe: sv.Recipe, Owner: sv.Owner, Exists: sv.ParentExists, Cversion: sv.Cversion, Pzxid: sv.Pzxid, parentCzxid: sv.parentCzxid,
		mzxid: sv.dataZxid}
	if sv.EpochKnown {
		v.epoch = &viewEpoch{value: sv.Epoch, czxid: sv.epochCzxid, writes: sv.epochWrites, writesKnown: true}
	}
	if sv.Owner != nil {
		v.Queue = []Participant{*sv.Owner}
		v.Owner = &v.Queue[0]
	}
	if !sv.ParentExists && sv.gpKnown {
		// The count of the missing parent's makings, for an observation
		// continued from this view (Since; see ancestorOf).
		v.parentCv, v.parentCzxid, v.parentKnown, v.anchorUp = sv.gpCv, sv.gpCzxid, true, sv.gpUp
	}
	return v
}

// ReadSingle reads a single-node leader once, without watches, after the
// session's server caught up with the leader (see catchUp).
func ReadSingle(ctx context.Context, s *Session, p string, sn SingleNode) (SingleView, error) {
	if s == nil {
		return SingleView{}, errors.New("elect: nil session")
	}
	if err := ValidatePath(p); err != nil {
		return SingleView{}, err
	}
	if err := catchUp(ctx, s, p); err != nil {
		return SingleView{}, err
	}
	if sn.EpochPath != "" {
		if err := ValidatePath(sn.EpochPath); err != nil {
			return SingleView{}, fmt.Errorf("elect: epoch path: %w", err)
		}
	}
	r := singleReader{conn: s.Conn(), path: p, parent: path.Dir(p), sn: sn, recipe: RecipeElection, crumb: crumbOf(sn.Format, p)}
	sv, _, err := r.read(ctx, false)
	return sv, err
}

// singleReader reads a leader node, its parent's counters and its epoch.
type singleReader struct {
	conn   *zk.Conn
	path   string
	parent string
	sn     SingleNode
	recipe Recipe
	// crumb is the path of the leader's sibling record (crumbOf), "" for
	// none.
	crumb string
	// last is the last node read, and lastOwner its creator, kept so that
	// its data is decoded (and a fallback reported) once per owner.
	last      *SingleView
	lastOwner Participant
	// epochErrAt is the mzxid of the epoch node last found holding no
	// epoch, reported (OnFallback) once.
	epochErrAt int64
	// reported is the owner node ("<name>@<term>") the state before this
	// reader's first read named (Since, AfterOwner), "" for none, and
	// reportedID that owner's ID ("" when not known, ReportOwnerID).
	reported, reportedID string
	// parentMissing: the last read found the parent missing; missingUp,
	// how far above the parent's parent the ancestor it counted at was
	// (see nearestThere).
	parentMissing bool
	missingUp     uint8
	// parentCh is the parent's watch last set (parentGoneWatch).
	parentCh <-chan zk.Event
	// reportedSeen is the zxid that state was read at: the leader node's
	// last write its observer read (Since), or the report's zxid; 0 when
	// not known. A write at or before it was judged by that observer.
	reportedSeen int64
}

// readAttempts bounds how often a read is repeated because the parent
// changed while it was read; after that the view is taken as it is, with
// its counters marked inexact.
const readAttempts = 4

// read reads the parent's stat, the epoch, the node (with a watch: a data
// watch when it exists, an exists watch when not) and the parent's stat
// again; when the parent changed in between, or the epoch was written
// after the node, it reads again.
//
// The epoch is read before the node: when the node is missing, the epoch
// read is that of the last election before the node was found missing
// (one after it would hide an election whose owner came and went). When
// the node exists, its epoch is the one written in the same transaction
// (same mzxid), read again after the node when need be, or one written
// after the node and read before it (see ownEpoch).
func (r *singleReader) read(ctx context.Context, watch bool) (SingleView, singleWatch, error) {
	var w singleWatch
	for attempt := 1; ; attempt++ {
		p1, gp, up, err := r.parentFirst(ctx)
		if err != nil {
			return SingleView{}, w, err
		}
		e1, est1, err := r.epoch(ctx)
		hidden := errors.Is(err, errEpochHidden)
		if err != nil && !hidden {
			return SingleView{}, w, err
		}
		sv := SingleView{Path: r.path, Recipe: r.recipe}
		data, st, nch, err := r.node(ctx, watch)
		if err != nil {
			return SingleView{}, w, err
		}
		if nch != nil {
			w.node = nch
		}
		epoch, est := e1, est1
		own := ownEpoch(st, est1)
		if st != nil && est != nil && est.Mzxid != st.Mzxid && !own {
			epoch, est, err = r.epoch(ctx)
			if hidden = errors.Is(err, errEpochHidden); err != nil && !hidden {
				return SingleView{}, w, err
			}
		}
		if err := r.siblings(ctx, &sv, est, hidden); err != nil {
			return SingleView{}, w, err
		}
		p2, err := r.parentAfter(ctx, &sv, p1, gp, up)
		if err != nil {
			return SingleView{}, w, err
		}
		epochAhead := !own && st != nil && est != nil && est.Mzxid > st.Mzxid // a newer election: read again
		if (!sv.consistent || epochAhead) && attempt < readAttempts {
			continue
		}
		if st != nil {
			r.fill(&sv, data, st, est)
			if watch && st.NumChildren > 0 {
				// Observed as a leader, a group would be published
				// without an owner while its queue has one.
				return SingleView{}, w, fmt.Errorf("%w: %s has %d children: a group, whose owner is the first of its queue; observe it as a group (bridge --watch %s)", ErrNotALeader, r.path, st.NumChildren, r.path)
			}
		}
		r.fillEpoch(&sv, epoch, st, est, own, hidden)
		if watch && st == nil && p2 != nil {
			if w.parent, err = r.parentGoneWatch(ctx); err != nil {
				return SingleView{}, w, err
			}
		}
		r.parentMissing, r.missingUp = !sv.ParentExists, sv.gpUp
		return sv, w, nil
	}
}

// singleWatch is what a read of a single-node leader watches: the node
// (its writes, deletion or creation) and, while no node stands under an
// existing parent, the parent's deletion.
type singleWatch struct {
	node, parent <-chan zk.Event
}

// siblings reads the parent's other children that move its child counter
// with the leader node (the epoch node, stat est, and a breadcrumb) into
// sv.
func (r *singleReader) siblings(ctx context.Context, sv *SingleView, est *zk.Stat, hidden bool) error {
	if r.sn.EpochPath != "" && path.Dir(r.sn.EpochPath) == r.parent && !hidden {
		sv.sibEpochRead = true
		if est != nil {
			sv.sibEpoch = est.Czxid
		}
	}
	var err error
	sv.crumb, sv.crumbRead, err = r.crumbCzxid(ctx)
	return err
}

// parentFirst reads the parent's stat at the start of a read. A missing
// parent is proved missing after the stat of its nearest ancestor that
// exists is read (gp, up levels above the parent's parent; nil when the
// parent exists or that stat is not known), so that every parent made
// after the proof is counted in the child version the next read finds
// there (see parentMadeOnce).
func (r *singleReader) parentFirst(ctx context.Context) (p1, gp *zk.Stat, up uint8, err error) {
	if p1, err = r.parentStat(ctx); err != nil || p1 != nil || r.parent == "/" {
		return p1, nil, 0, err
	}
	if gp, up, err = nearestThere(ctx, r.conn, path.Dir(r.parent)); err != nil {
		return nil, nil, 0, err
	}
	p1, err = r.parentStat(ctx)
	if p1 != nil {
		gp = nil // made meanwhile: read as existing
	}
	return p1, gp, up, err
}

// parentAfter reads the parent's stat at the end of a read into sv (p1:
// at the start, gp: its nearest ancestor's, up levels above its parent,
// for a parent missing), and that ancestor's child version when the
// parent exists where the last read found it missing (see
// parentMadeOnce).
func (r *singleReader) parentAfter(ctx context.Context, sv *SingleView, p1, gp *zk.Stat, up uint8) (*zk.Stat, error) {
	p2, err := r.parentStat(ctx)
	if err != nil {
		return nil, err
	}
	sv.consistent = sameStat(p1, p2)
	if p2 == nil {
		if gp != nil {
			sv.gpCv, sv.gpCzxid, sv.gpKnown, sv.gpUp = gp.Cversion, gp.Czxid, true, up
		}
		return nil, nil
	}
	sv.ParentExists, sv.Cversion, sv.Pzxid, sv.parentCzxid = true, p2.Cversion, p2.Pzxid, p2.Czxid
	if r.parentMissing && r.parent != "/" {
		g, once, err := anchorAgain(ctx, r.conn, path.Dir(r.parent), r.missingUp)
		if err != nil {
			return nil, err
		}
		if g != nil && once {
			sv.gpCv, sv.gpCzxid, sv.gpKnown, sv.gpUp = g.Cversion, g.Czxid, true, r.missingUp
		}
	}
	return p2, nil
}

// parentGoneWatch watches the parent's deletion while no leader node
// stands under it: a parent deleted empty (Curator's containers are
// reaped so) is then read missing, and the parent made again counted
// from there (parentMadeOnce). Without it the next read found a parent
// made again, which nothing accounts for: a gap, though nothing was
// missed.
//
// One set and not fired yet is kept: the client keeps every watch set
// until it fires, and a parent that stays would hold one per leader.
func (r *singleReader) parentGoneWatch(ctx context.Context) (<-chan zk.Event, error) {
	if r.parentCh != nil {
		select {
		case <-r.parentCh: // fired, or ended: set it again
		default:
			return r.parentCh, nil
		}
	}
	ok, _, ch, err := existsW(ctx, r.conn, r.parent)
	if err != nil || !ok {
		r.parentCh = nil
		return nil, err // gone meanwhile: the node's watch sees what follows
	}
	r.parentCh = ch
	return ch, nil
}

// errEpochHidden is what epoch returns when the epoch node's ACL does not
// let this identity read it.
var errEpochHidden = errors.New("elect: the epoch node may not be read")

// fillEpoch sets sv's epoch from the epoch node's data and stat est, read
// with the leader node (stat st, nil when missing; own: see ownEpoch),
// or says why it is not known: hidden by its ACL, or no number.
func (r *singleReader) fillEpoch(sv *SingleView, epoch []byte, st, est *zk.Stat, own, hidden bool) {
	switch {
	case hidden:
		// The leader may still be read and reported: an ACL on the
		// epoch alone ended its observation, naming neither node.
		sv.EpochErr, sv.epochHidden = fmt.Sprintf("%s may not be read (its ACL does not let this identity READ it)", r.sn.EpochPath), true
	case r.sn.EpochPath != "" && st == nil && est == nil:
		// No epoch node: no election yet (Kafka creates it with 0,
		// its initial epoch, before the first).
		sv.EpochKnown = true
	case r.sn.EpochPath != "" && est == nil:
		// A leader without its epoch node: deleted under it (by hand,
		// a cleanup) or not written yet. Its epoch was left out without
		// a word, as if the system kept none.
		sv.EpochErr, sv.epochMissing = fmt.Sprintf("%s does not exist (deleted under the live leader, or not written yet)", r.sn.EpochPath), true
	case est != nil && (st == nil || est.Mzxid == st.Mzxid || own):
		e, err := ident.ParseEpoch(epoch)
		if err == nil {
			sv.Epoch, sv.EpochKnown, sv.epochWrites, sv.epochCzxid = e, true, est.Version, est.Czxid
			return
		}
		// Written by someone else than its system: say so, as for
		// a leader node's data, once per write.
		sv.EpochErr = fmt.Sprintf("%s holds data that is no epoch (%v)", r.sn.EpochPath, err)
		sv.epochNoNumber, sv.epochMzxid = true, est.Mzxid
		if r.sn.OnFallback != nil && r.epochErrAt != est.Mzxid {
			r.sn.OnFallback(r.sn.EpochPath, err)
		}
		r.epochErrAt = est.Mzxid
	}
}

// crumbOf is the path of the record a system keeps beside its leader node
// p, whose creates and deletes move the parent's child counter too: Hadoop's
// ActiveBreadCrumb, created (or rewritten) by each new active node and
// deleted by one that steps down gracefully. "" for other leaders.
func crumbOf(f ident.Format, p string) string {
	if f == "" || f == ident.Auto {
		f = ident.ForPath(p)
	}
	if (f == ident.HadoopHA || f == ident.YarnRM) && path.Base(p) == "ActiveStandbyElectorLock" {
		return path.Join(path.Dir(p), "ActiveBreadCrumb")
	}
	return ""
}

// crumbCzxid is the czxid of the leader's sibling record, 0 when it is
// missing; known is false when the leader has none, or its ACL hides it
// (then its changes are not told from a leader's, as before).
func (r *singleReader) crumbCzxid(ctx context.Context) (czxid int64, known bool, err error) {
	if r.crumb == "" {
		return 0, false, nil
	}
	st, err := call(ctx, func() (*zk.Stat, error) {
		ok, st, err := r.conn.Exists(r.crumb)
		if !ok {
			st = nil
		}
		return st, err
	})
	switch {
	case errors.Is(err, zk.ErrNoAuth):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	case st == nil:
		return 0, true, nil
	}
	return st.Czxid, true, nil
}

// crumbChanges is how many creates and deletes of the leader's sibling
// record the two reads show (a new record: its predecessor's delete and
// its create), so many of the parent's child changes being its, not a
// leader's: Hadoop's failovers moved the counter by two more than the
// lock's delete and create, and every one was published as a gap. So too
// of the epoch node beside it (sibEpoch), which a view from elsewhere
// (Since, prevSV nil) keeps with its epoch: without it, the next
// controller after an epoch node made again was a gap to an observation
// continued from such a view (a bridge's session made again), though
// nothing went unseen. A report's epoch (no writes known) keeps no node.
func crumbChanges(pv View, prev *SingleView, sv SingleView) int {
	if prev == nil {
		if e := pv.epoch; e != nil && e.writesKnown && sv.sibEpochRead {
			return siblingChanges(e.czxid, sv.sibEpoch)
		}
		return 0
	}
	n := 0
	if prev.sibEpochRead && sv.sibEpochRead {
		n = siblingChanges(prev.sibEpoch, sv.sibEpoch)
	}
	if !prev.crumbRead || !sv.crumbRead {
		return n
	}
	return n + siblingChanges(prev.crumb, sv.crumb)
}

// siblingChanges is how many creates and deletes of one node two czxids
// read of it (0: absent) show.
func siblingChanges(was, is int64) int {
	switch {
	case was == is:
		return 0
	case was == 0 || is == 0:
		return 1
	}
	return 2
}

// ownEpoch reports whether the epoch node, read (stat est) before the
// leader node (stat st), was written after that node: then it was written
// during its tenure, since the same node still stood when read after it,
// so it is its owner's epoch. Kafka wrote the two apart before it wrote
// them in one transaction (a create of /controller, then a setData of
// /controller_epoch, only by the broker that created it); written
// together, an epoch newer than the node read after it cannot be.
func ownEpoch(st, est *zk.Stat) bool {
	return st != nil && est != nil && est.Mzxid > st.Mzxid
}

// epoch reads the epoch node (nil stat without one, or when it is missing;
// errEpochHidden when its ACL hides it).
func (r *singleReader) epoch(ctx context.Context) ([]byte, *zk.Stat, error) {
	if r.sn.EpochPath == "" {
		return nil, nil, nil
	}
	d, st, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return r.conn.Get(r.sn.EpochPath) })
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, nil, nil
	case errors.Is(err, zk.ErrNoAuth):
		return nil, nil, errEpochHidden
	}
	return d, st, err
}

func sameStat(a, b *zk.Stat) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Cversion == b.Cversion && a.Pzxid == b.Pzxid
}

// parentStat is the parent's stat, nil when it does not exist.
func (r *singleReader) parentStat(ctx context.Context) (*zk.Stat, error) {
	return statOf(ctx, r.conn, r.parent)
}

// node reads the leader node's data and stat (nil when it does not
// exist). With watch it arms a data watch on it, or an exists watch for
// its creation.
func (r *singleReader) node(ctx context.Context, watch bool) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	for {
		got, err := readNode(ctx, r.conn, r.path, watch)
		if err == nil {
			return got.data, got.st, got.ch, nil
		}
		if errors.Is(err, zk.ErrNoAuth) {
			return nil, nil, nil, fmt.Errorf("elect: may not read %s: %w (its ACL does not let this identity READ it); check its ACL and your credentials", r.path, err)
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return nil, nil, nil, err
		}
		if !watch {
			return nil, nil, nil, nil
		}
		ok, _, ch, err := existsW(ctx, r.conn, r.path)
		if err != nil {
			return nil, nil, nil, err
		}
		if !ok {
			return nil, nil, ch, nil
		}
		// created meanwhile: read it
	}
}

// fill makes the node's creator the owner of sv, its identity decoded
// from data once per owner, unless the node is not a leader's (NotLeaderNode;
// looked at with every read, as children may come and go).
func (r *singleReader) fill(sv *SingleView, data []byte, st, est *zk.Stat) {
	sv.Children = st.NumChildren
	sv.dataZxid, sv.nodeCzxid, sv.dataVersion = st.Mzxid, st.Czxid, st.Version
	sv.Since = time.UnixMilli(st.Mtime).UTC()
	var p Participant
	if l := r.last; l != nil && l.dataZxid == st.Mzxid && l.nodeCzxid == st.Czxid {
		p, sv.Identity, sv.DecodeErr, sv.restartNote = r.lastOwner, l.Identity, l.DecodeErr, l.restartNote
	} else {
		id, err := ident.Decode(r.sn.Format, r.path, data)
		sv.Identity, sv.DecodeErr = id, err
		if err != nil && r.sn.OnFallback != nil {
			r.sn.OnFallback(r.path, err)
		}
		switch {
		case r.sameTenure(st, id, err):
			// Rewritten by someone else than its system (an operator's
			// set), or with the same owner: no new leader, nor a new
			// start.
			p, sv.Since, sv.restartNote = r.lastOwner, r.last.Since, r.last.restartNote
			if err != nil {
				sv.Identity = r.last.Identity
			}
		case st.EphemeralOwner != 0 && st.Mzxid != st.Czxid && (err != nil || r.last == nil || r.last.nodeCzxid != st.Czxid):
			// An ephemeral node first read (a reader started, a session
			// made again), or holding data its system did not write,
			// written after the node was made: no system writes its
			// ephemeral leader node again, so that was someone else's
			// write (an operator's set, or its undoing), and the tenure
			// is the node's, from its creation, or from the write the
			// last report names (a rewrite naming another owner, which
			// the reporter took for a new one). Data that does not decode
			// names nobody: its session does. Taking the write for the
			// start made a new leader of every restart, named by the
			// operator's text, and split a tenure whose data was set back.
			term := r.reportedTerm(st, singleOwner(r.path, st, 0, id.ID).ID, err)
			if err != nil {
				id.ID = ""
			}
			p = singleOwner(r.path, st, term, id.ID)
			sv.Since = time.UnixMilli(st.Ctime).UTC()
			if term != st.Czxid {
				sv.Since = time.UnixMilli(st.Mtime).UTC() // that write's, at the latest
			}
		case st.EphemeralOwner == 0 && r.last == nil && err == nil && st.Mzxid != st.Czxid && id.Fields["controller"] == "kraft":
			// A KRaft controller's /controller first read (who, a
			// bridge restarted) after a write since its registration.
			p = r.kraftFirstRead(sv, st, est, id.ID)
		default:
			// The term is the zxid of the write that made this owner:
			// the czxid of a node written once.
			p = singleOwner(r.path, st, st.Mzxid, id.ID)
		}
	}
	sv.Owner = &p
	if why := notLeader(r.sn.Format, r.path, st, sv.Identity, sv.DecodeErr); why != "" {
		sv.Owner, sv.NotLeaderNode = nil, why
		// A group is refused by the observer (ErrNotALeader), which says
		// what to do instead.
		if l := r.last; r.sn.OnNotLeader != nil && st.NumChildren == 0 && (l == nil || l.NotLeaderNode != why || l.dataZxid != st.Mzxid || l.nodeCzxid != st.Czxid) {
			r.sn.OnNotLeader(r.path, why)
		}
	}
	keep := *sv
	r.last, r.lastOwner = &keep, p
}

// reportedTerm is the term of the ephemeral node st, written after it
// was made, as this reader's first read counts it: the write its report
// (Since, AfterOwner) names as the owner's term, when that is one of this
// node's (its creation or a write since), else the node's creation. When
// the report names another owner of this node than its data, id (err: it
// does not decode), a write since named this one, a new owner to the
// observer that saw it: the latest write stands for it. Taking the
// report's term named the new owner by the reported tenure's node, and
// the change of owner went unsaid. A report whose owner's ID is not known
// is taken for this owner's.
func (r *singleReader) reportedTerm(st *zk.Stat, id string, err error) int64 {
	if r.last != nil {
		return st.Czxid
	}
	t, ok := strings.CutPrefix(r.reported, path.Base(r.path)+"@")
	if !ok {
		return st.Czxid
	}
	term, perr := strconv.ParseInt(t, 10, 64)
	switch {
	case perr != nil || term < st.Czxid || term > st.Mzxid:
		return st.Czxid
	case err == nil && r.reportedID != "" && id != r.reportedID:
		return st.Mzxid
	}
	return term
}

// kraftFirstRead is the owner of a KRaft controller's /controller (stat
// st, naming id) first read after a write since its registration, its
// term told by kraftTerm, with its start and any restart note in sv.
func (r *singleReader) kraftFirstRead(sv *SingleView, st, est *zk.Stat, id string) Participant {
	term, note := r.kraftTerm(st, id, est)
	sv.restartNote, sv.restartGap = note, note != ""
	switch {
	case term == st.Czxid:
		sv.Since = time.UnixMilli(st.Ctime).UTC()
	case est != nil && term == est.Mzxid:
		// The registration's time, written with the epoch node: the
		// later write's was shown as the tenure's start.
		sv.Since = time.UnixMilli(est.Mtime).UTC()
	}
	return singleOwner(r.path, st, term, id)
}

// kraftTerm is the term of a KRaft controller's persistent /controller
// (stat st, naming id), written again since it was made, as a first read
// counts it, and a note when it cannot be sure. A KRaft controller
// registers by writing /controller_epoch and /controller in one
// transaction, so the epoch node's last write (est), when it is one of
// this node's, is the registration, and a write after it (an operator's
// set, a restore of the same bytes) no election. Without the epoch node,
// the report this reader continues from is kept when it names this
// node's owner, by its ID, in one of its writes: nothing tells a rewrite from that
// controller's re-election in a later KRaft epoch, which the note says.
// Else the latest write stands, as before. Taking the latest write for
// the term made a new tenure of every restart after a rewrite that the
// running observer had kept as the same one.
func (r *singleReader) kraftTerm(st *zk.Stat, id string, est *zk.Stat) (int64, string) {
	if est != nil && est.Mzxid >= st.Czxid && est.Mzxid <= st.Mzxid {
		return est.Mzxid, ""
	}
	t, ok := strings.CutPrefix(r.reported, path.Base(r.path)+"@")
	term, perr := strconv.ParseInt(t, 10, 64)
	if !ok || perr != nil || term < st.Czxid || term >= st.Mzxid || r.reportedID != id {
		return st.Mzxid, ""
	}
	if r.reportedSeen >= st.Mzxid {
		// The observer this one continues (a session made again) read
		// this write and kept the tenure: nothing to doubt, where it
		// was said to be a restart that may hide a re-election.
		return term, ""
	}
	return term, fmt.Sprintf("restarted: the tenure may continue: written again (zxid %d) since the report, naming the same KRaft controller; "+
		"without %s nothing tells a rewrite from its re-election in a later KRaft epoch", st.Mzxid, kraftEpochName(r.sn.EpochPath))
}

// kraftEpochName names the epoch node a KRaft controller writes, for a
// note: the reader's, or Kafka's name for it.
func kraftEpochName(p string) string {
	if p == "" {
		return "/controller_epoch"
	}
	return p
}

// singleOwner is the owner of the leader node at p, its stat st, in term
// (a zxid): named id, else by its session, else by the node's name.
func singleOwner(p string, st *zk.Stat, term int64, id string) Participant {
	o := Participant{ID: id, Node: path.Base(p) + "@" + strconv.FormatInt(term, 10), Session: st.EphemeralOwner, Czxid: term}
	if o.ID == "" {
		o.ID = o.SessionHex()
		if o.ID == "" {
			o.ID = path.Base(p)
		}
	}
	return o
}

// sameTenure reports whether the ephemeral node last read, written again
// (stat st, its data decoded as id, or not: err), is still its owner's
// tenure: the same session's node, whose new data its system did not
// write (it does not decode, where the last did: an operator's set) or
// names the same owner. A rewrite naming another owner is a new one, as
// for Kafka's /controller taken over by a KRaft controller. Kafka's
// persistent /controller keeps its tenure only through writes naming the
// same KRaft controller and epoch (sameKRaftLeader).
func (r *singleReader) sameTenure(st *zk.Stat, id ident.Identity, err error) bool {
	l := r.last
	if l == nil || l.Owner == nil || l.nodeCzxid != st.Czxid || l.Owner.Session != st.EphemeralOwner {
		return false
	}
	if st.EphemeralOwner == 0 {
		return err == nil && sameKRaftLeader(id, l.Identity)
	}
	if err != nil {
		return !l.Identity.Fallback
	}
	return id.ID == l.Identity.ID
}

// sameKRaftLeader reports whether id, read from Kafka's persistent
// /controller written again, names the KRaft controller last read in the
// same KRaft epoch: KRaft elects one leader per epoch, so that write (an
// operator's set, a restore of the same bytes) is no election. It was
// published as the controller's loss and a new tenure of it.
func sameKRaftLeader(id, last ident.Identity) bool {
	e := id.Fields["kraft_controller_epoch"]
	return id.Format == ident.Kafka && last.Format == ident.Kafka && id.ID == last.ID && e != "" && e == last.Fields["kraft_controller_epoch"]
}

// notLeader says why a node is not a leader's ("" when it may be one):
// see SingleView.NotLeaderNode.
func notLeader(f ident.Format, p string, st *zk.Stat, id ident.Identity, decodeErr error) string {
	if st.EphemeralOwner != 0 {
		return ""
	}
	if f == "" || f == ident.Auto {
		f = ident.ForPath(p)
	}
	switch {
	case st.NumChildren > 0:
		return fmt.Sprintf("persistent and with %d children: a group, not a leader node", st.NumChildren)
	case path.Base(p) == "ActiveBreadCrumb":
		return "Hadoop's ActiveBreadCrumb: the last active node's record, kept to fence it, never a lock; the leader is " +
			path.Join(path.Dir(p), "ActiveStandbyElectorLock")
	case f == ident.Generic:
		return "persistent (no session holds it) and of no known system's format: not a leader node"
	case decodeErr != nil || id.Fallback:
		return fmt.Sprintf("persistent (no session holds it) and its data is not %s's: made by hand, not by a leader", f)
	case f != ident.Kafka || id.Fields["controller"] != "kraft":
		// The one leader written as a persistent node is a KRaft
		// controller's /controller during a migration; any other, even
		// with its system's bytes, was copied or made by hand.
		return fmt.Sprintf("persistent (no session holds it): %s writes its leader node ephemeral, so this one was copied or made by hand", f)
	}
	return ""
}
