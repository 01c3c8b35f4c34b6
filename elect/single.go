package elect

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"sync"
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
func (sv SingleView) Note() string {
	if sv.Owner != nil && sv.Owner.Session == 0 && sv.Identity.Format == ident.Kafka && sv.Identity.Fields["controller"] == "kraft" {
		return KRaftNote
	}
	return ""
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
	// ParentExists, Cversion and Pzxid are the parent's: whether it
	// exists, its child version and the zxid of its last child change.
	ParentExists bool
	Cversion     int32
	Pzxid        int64
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
	// crumb is the czxid of the record a system keeps beside its leader
	// node (Hadoop's ActiveBreadCrumb), 0 when absent; crumbRead says the
	// reader looks for one.
	crumb     int64
	crumbRead bool
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
	v := View{Group: sv.Path, Recipe: sv.Recipe, Owner: sv.Owner, Exists: sv.ParentExists, Cversion: sv.Cversion, Pzxid: sv.Pzxid,
		epoch: sv.Epoch, epochKnown: sv.EpochKnown}
	if sv.Owner != nil {
		v.Queue = []Participant{*sv.Owner}
		v.Owner = &v.Queue[0]
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
func (r *singleReader) read(ctx context.Context, watch bool) (SingleView, <-chan zk.Event, error) {
	var ch <-chan zk.Event
	for attempt := 1; ; attempt++ {
		p1, err := r.parentStat(ctx)
		if err != nil {
			return SingleView{}, nil, err
		}
		e1, est1, err := r.epoch(ctx)
		if err != nil {
			return SingleView{}, nil, err
		}
		sv := SingleView{Path: r.path, Recipe: r.recipe}
		data, st, nch, err := r.node(ctx, watch)
		if err != nil {
			return SingleView{}, nil, err
		}
		if nch != nil {
			ch = nch
		}
		epoch, est := e1, est1
		own := ownEpoch(st, est1)
		if st != nil && est != nil && est.Mzxid != st.Mzxid && !own {
			if epoch, est, err = r.epoch(ctx); err != nil {
				return SingleView{}, nil, err
			}
		}
		if sv.crumb, sv.crumbRead, err = r.crumbCzxid(ctx); err != nil {
			return SingleView{}, nil, err
		}
		p2, err := r.parentStat(ctx)
		if err != nil {
			return SingleView{}, nil, err
		}
		if p2 != nil {
			sv.ParentExists, sv.Cversion, sv.Pzxid = true, p2.Cversion, p2.Pzxid
		}
		sv.consistent = sameStat(p1, p2)
		epochAhead := !own && st != nil && est != nil && est.Mzxid > st.Mzxid // a newer election: read again
		if (!sv.consistent || epochAhead) && attempt < readAttempts {
			continue
		}
		if st != nil {
			r.fill(&sv, data, st)
			if watch && st.NumChildren > 0 {
				// Observed as a leader, a group would be published
				// without an owner while its queue has one.
				return SingleView{}, nil, fmt.Errorf("%w: %s has %d children: a group, whose owner is the first of its queue; observe it as a group (bridge --watch %s)", ErrNotALeader, r.path, st.NumChildren, r.path)
			}
		}
		switch {
		case r.sn.EpochPath != "" && st == nil && est == nil:
			// No epoch node: no election yet (Kafka creates it with 0,
			// its initial epoch, before the first).
			sv.EpochKnown = true
		case est != nil && (st == nil || est.Mzxid == st.Mzxid || own):
			if e, err := ident.ParseEpoch(epoch); err == nil {
				sv.Epoch, sv.EpochKnown = e, true
			}
		}
		return sv, ch, nil
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
// lock's delete and create, and every one was published as a gap.
func crumbChanges(prev *SingleView, sv SingleView) int {
	switch {
	case prev == nil || !prev.crumbRead || !sv.crumbRead || prev.crumb == sv.crumb:
		return 0
	case prev.crumb == 0 || sv.crumb == 0:
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

// epoch reads the epoch node (nil stat without one, or when it is missing).
func (r *singleReader) epoch(ctx context.Context) ([]byte, *zk.Stat, error) {
	if r.sn.EpochPath == "" {
		return nil, nil, nil
	}
	d, st, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return r.conn.Get(r.sn.EpochPath) })
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil, nil
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
	type res struct {
		ok bool
		st *zk.Stat
	}
	got, err := call(ctx, func() (res, error) {
		ok, st, err := r.conn.Exists(r.parent)
		return res{ok, st}, err
	})
	if err != nil || !got.ok {
		return nil, err
	}
	return got.st, nil
}

// node reads the leader node's data and stat (nil when it does not
// exist). With watch it arms a data watch on it, or an exists watch for
// its creation.
func (r *singleReader) node(ctx context.Context, watch bool) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	type res struct {
		data []byte
		st   *zk.Stat
		ch   <-chan zk.Event
	}
	for {
		got, err := call(ctx, func() (res, error) {
			if watch {
				d, st, ch, err := r.conn.GetW(r.path)
				return res{d, st, ch}, err
			}
			d, st, err := r.conn.Get(r.path)
			return res{d, st, nil}, err
		})
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
func (r *singleReader) fill(sv *SingleView, data []byte, st *zk.Stat) {
	sv.Children = st.NumChildren
	sv.dataZxid, sv.nodeCzxid, sv.dataVersion = st.Mzxid, st.Czxid, st.Version
	sv.Since = time.UnixMilli(st.Mtime).UTC()
	var p Participant
	if l := r.last; l != nil && l.dataZxid == st.Mzxid && l.nodeCzxid == st.Czxid {
		p, sv.Identity, sv.DecodeErr = r.lastOwner, l.Identity, l.DecodeErr
	} else {
		id, err := ident.Decode(r.sn.Format, r.path, data)
		sv.Identity, sv.DecodeErr = id, err
		if err != nil && r.sn.OnFallback != nil {
			r.sn.OnFallback(r.path, err)
		}
		if r.sameTenure(st, id, err) {
			// Rewritten by someone else than its system (an operator's
			// set), or with the same owner: no new leader.
			p = r.lastOwner
			if err != nil {
				sv.Identity = r.last.Identity
			}
		} else {
			// The term is the zxid of the write that made this owner:
			// the czxid of a node written once.
			term := st.Mzxid
			p = Participant{ID: id.ID, Node: path.Base(r.path) + "@" + strconv.FormatInt(term, 10), Session: st.EphemeralOwner, Czxid: term}
			if p.ID == "" {
				p.ID = p.SessionHex()
				if p.ID == "" {
					p.ID = path.Base(r.path)
				}
			}
		}
	}
	sv.Owner = &p
	if why := notLeader(r.sn.Format, r.path, st, sv.Identity, sv.DecodeErr); why != "" {
		sv.Owner, sv.NotLeaderNode = nil, why
	}
	keep := *sv
	r.last, r.lastOwner = &keep, p
}

// sameTenure reports whether the ephemeral node last read, written again
// (stat st, its data decoded as id, or not: err), is still its owner's
// tenure: the same session's node, whose new data its system did not
// write (it does not decode, where the last did: an operator's set) or
// names the same owner. A rewrite naming another owner is a new one, as
// for Kafka's /controller taken over by a KRaft controller.
func (r *singleReader) sameTenure(st *zk.Stat, id ident.Identity, err error) bool {
	l := r.last
	if l == nil || l.Owner == nil || st.EphemeralOwner == 0 || l.nodeCzxid != st.Czxid || l.Owner.Session != st.EphemeralOwner {
		return false
	}
	if err != nil {
		return !l.Identity.Fallback
	}
	return id.ID == l.Identity.ID
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

// ObserveSingle streams the changes of a single-node leader at p, with the
// same contract as Observe: a Snapshot first, OwnerChanged when the node
// goes (Owner nil) or appears (Previous nil) or both between two reads,
// Unknown when the connection is lost and a fresh Snapshot once it is
// back, Gap when an owner may have come and gone unseen. It needs one
// watch, on the node. ObserveOption's Buffer, AsRecipe, WithRecipeRules,
// Since, AfterOwner (or AfterReport) and ReportEpoch apply.
//
// Gap: with an epoch (SingleNode.EpochPath) known for both owners, an
// election went unseen exactly when the epoch moved by more than one; so
// too against a view given to Since (it keeps its epoch) and a report
// given its epoch (ReportEpoch).
// Otherwise the parent's child version must account for what the two
// reads show (one create, one delete); a sibling of the node created or
// deleted meanwhile also counts, so Gap may be said when nothing was
// missed, never the other way round.
func ObserveSingle(ctx context.Context, s *Session, p string, sn SingleNode, opts ...ObserveOption) (*SingleObserver, error) {
	if s == nil {
		return nil, errors.New("elect: nil session")
	}
	st, oo, err := newSingleState(s, p, sn, opts)
	if err != nil {
		return nil, err
	}
	so := &SingleObserver{Observer: &Observer{ch: make(chan Change, oo.buffer), done: make(chan struct{})}}
	ob := &singleObservation{o: so, s: s, singleState: st}
	stop := watchLate(s, &ob.lateMark, func(q string) bool { return q == p })
	go func() {
		defer stop()
		ob.run(ctx)
	}()
	return so, nil
}

// newSingleState checks a single-node leader's path, SingleNode and
// options, and makes the state its observation starts from.
func newSingleState(s *Session, p string, sn SingleNode, opts []ObserveOption) (singleState, observeOptions, error) {
	if err := ValidatePath(p); err != nil {
		return singleState{}, observeOptions{}, err
	}
	if p == "/" {
		return singleState{}, observeOptions{}, fmt.Errorf("%w: / cannot be a leader node", ErrBadPath)
	}
	if sn.EpochPath != "" {
		if err := ValidatePath(sn.EpochPath); err != nil {
			return singleState{}, observeOptions{}, fmt.Errorf("elect: epoch path: %w", err)
		}
	}
	if sn.Format != "" {
		if _, err := ident.ParseFormat(string(sn.Format)); err != nil {
			return singleState{}, observeOptions{}, err
		}
	}
	oo := observeOptions{buffer: 64}
	for _, opt := range opts {
		if opt == nil {
			return singleState{}, observeOptions{}, errNilOption
		}
		if err := opt(&oo); err != nil {
			return singleState{}, observeOptions{}, err
		}
	}
	if r, ok := oo.rules.For(p); ok && oo.recipe == "" {
		oo.recipe = r
	}
	if oo.recipe == "" {
		oo.recipe = RecipeElection
	}
	st := singleState{r: singleReader{conn: s.Conn(), path: p, parent: path.Dir(p), sn: sn, recipe: oo.recipe, crumb: crumbOf(sn.Format, p)}}
	switch {
	case oo.since != nil:
		st.before = &singleBefore{view: *oo.since}
	case oo.after != nil:
		v := *oo.after
		v.Group = p
		if oo.reportEpoch != nil && sn.EpochPath != "" {
			v.epoch, v.epochKnown = *oo.reportEpoch, true
		}
		st.before = &singleBefore{view: v}
	}
	return st, oo, nil
}

// SingleObserver is the Observer of a single-node leader; Leader adds
// what the events cannot carry: the owner's decoded identity and the
// system's epoch.
type SingleObserver struct {
	*Observer
	mu     sync.Mutex
	leader *SingleView
}

// Leader is the latest view the observer emitted changes for (false
// before the first).
func (o *SingleObserver) Leader() (SingleView, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.leader == nil {
		return SingleView{}, false
	}
	return *o.leader, true
}

// singleBefore is the last state before a stretch not seen: a view, and
// the epoch when this observer knew it.
type singleBefore struct {
	view  View
	epoch *SingleView
}

// singleState is what the observation of a single-node leader carries
// from one read to the next, whether it runs on a goroutine of its own
// (ObserveSingle) or by turns (Many.AddSingle).
type singleState struct {
	r      singleReader
	prev   *SingleView
	before *singleBefore
	// pendingGap: a read showed no new owner, but an election went
	// unseen; the next change carries Gap.
	pendingGap bool
}

type singleObservation struct {
	singleState
	o     *SingleObserver
	s     *Session
	watch <-chan zk.Event
	lateMark
}

func (ob *singleObservation) run(ctx context.Context) {
	ob.o.loop(ctx, ob.s, ob.suspended, ob.step)
}

// step reads the node, emits what changed and waits for its watch.
func (ob *singleObservation) step(ctx context.Context, changed <-chan struct{}) error {
	ob.takeFired()
	cctx, cancel := stateCtx(changed, ctx.Done())
	sv, ch, err := ob.r.read(cctx, true)
	cancel()
	if err != nil {
		return ob.readFailed(ctx, err)
	}
	ob.watch = ch
	changes := ob.changes(sv)
	ob.late(changes)
	// Leader says what the changes say by the time a reader has them;
	// Last only once they are out, since the next observation is measured
	// against it.
	ob.o.mu.Lock()
	ob.o.leader = &sv
	ob.o.mu.Unlock()
	if !ob.emit(ctx, changes) {
		return errStop
	}
	ob.setLast(sv)
	return ob.await(ctx, changed)
}

// singleSnapshot is the Snapshot change that states sv afresh.
func singleSnapshot(sv SingleView) Change {
	v := sv.view()
	c := Change{Kind: Snapshot, Group: sv.Path, Recipe: sv.Recipe, Owner: v.Owner, Queue: v.Queue, Zxid: sv.zxid(), Note: sv.Note()}
	if sv.EpochKnown {
		c.Epoch = sv.Epoch
	}
	return c
}

// changes are what a read shows since the last one: a Snapshot first
// (measured against the state before a stretch not seen), then
// OwnerChanged when the owner differs. The caller records sv as prev
// (with the changes, see step).
func (st *singleState) changes(sv SingleView) []Change {
	v := sv.view()
	epoch := int64(0)
	if sv.EpochKnown {
		epoch = sv.Epoch
	}
	switch {
	case st.prev == nil:
		c := singleSnapshot(sv)
		if st.before != nil {
			c.Gap = st.pendingGap || st.before.missed(sv)
			if b := st.before.view; b.Owner != nil && !b.heldAsOf.IsZero() && ownerNode(b.Owner) != ownerNode(sv.Owner) {
				c.Before, c.BeforeHeld = b.Owner, b.heldAsOf
			}
			st.before, st.pendingGap = nil, false
		}
		return []Change{c}
	case ownerNode(st.prev.Owner) != ownerNode(sv.Owner):
		c := Change{Kind: OwnerChanged, Epoch: epoch, Group: sv.Path, Recipe: sv.Recipe, Owner: v.Owner, Previous: st.prev.Owner,
			Queue: v.Queue, Zxid: sv.zxid(), Gap: st.pendingGap || missedSingle(st.prev.view(), st.prev, sv), Note: sv.Note()}
		if st.prev.Owner != nil {
			c.Reason = ReasonUnknown // ZooKeeper does not say why a node went
		}
		st.pendingGap = false
		return []Change{c}
	}
	// No owner change to report, but a node may have come and gone since
	// the last read (its creation fired the watch): the next change says
	// so.
	st.pendingGap = st.pendingGap || missedSingle(st.prev.view(), st.prev, sv)
	return nil
}

// unseen ends what the last read showed when the connection is lost: the
// Unknown change to send (false when nothing was shown yet), and the next
// read is measured against it (which ZooKeeper vouched for up to held,
// zero when not known).
func (st *singleState) unseen(held time.Time) (Change, bool) {
	if st.prev == nil {
		return Change{}, false
	}
	prev := *st.prev
	st.before = &singleBefore{view: prev.view(), epoch: &prev}
	st.before.view.heldAsOf = held
	st.prev = nil
	return Change{Kind: Unknown, Group: prev.Path, Recipe: prev.Recipe, Zxid: prev.zxid()}, true
}

func ownerNode(p *Participant) string {
	if p == nil {
		return ""
	}
	return p.Node
}

// missed is whether an owner may have come and gone between the state
// before a stretch not seen and sv.
func (b *singleBefore) missed(sv SingleView) bool {
	v := b.view
	if v.Owner != nil && sv.Owner != nil && v.Owner.Node == sv.Owner.Node || v.Group != sv.Path {
		return false
	}
	if gap, ok := missedByEpoch(v, sv); ok {
		// The epoch counts the elections exactly, also from a report.
		return gap
	}
	if v.ownerOnly {
		// Only the last owner reported and its zxid are known (a bridge
		// restarted on its audit log): no child change of the parent
		// since proves nothing happened, nor a write to the node (an owner
		// that rewrites it) since.
		return sv.zxid() > v.Pzxid
	}
	return missedSingle(v, b.epoch, sv)
}

// missedSingle is whether an owner may have come and gone unseen between
// the view prev (with its SingleView, when this observer read it) and sv:
// an election beyond the one sv shows, if it shows a new owner.
func missedSingle(prev View, prevSV *SingleView, sv SingleView) bool {
	if gap, ok := missedByEpoch(prev, sv); ok {
		return gap
	}
	changed := ownerNode(prev.Owner) != ownerNode(sv.Owner)
	seen := 0 // elections the two views show
	if changed && sv.Owner != nil {
		seen = 1
	}
	// The same node written again (owners that rewrite it): only writes
	// can have been missed, and its data version counts them.
	if prevSV != nil && prevSV.Owner != nil && sv.Owner != nil && prevSV.nodeCzxid == sv.nodeCzxid {
		// An owner kept across writes (sameTenure) was not re-elected.
		return changed && int64(sv.dataVersion)-int64(prevSV.dataVersion) > int64(seen)
	}
	switch {
	case !sv.ParentExists:
		// The parent went: nothing tells what happened below it.
		return prev.Exists && changed
	case !prev.Exists:
		// The parent appeared: its child version counts every create
		// and delete since; only the owner's create is accounted for.
		return int64(sv.Cversion) > int64(b2i(sv.Owner != nil)+b2i(sv.crumb != 0))
	case prevSV != nil && !prevSV.consistent || !sv.consistent:
		return changed // the counters are not exact
	}
	// Every create and delete of the parent's children bumps its child
	// version: one delete and one create explain a new owner.
	expected := crumbChanges(prevSV, sv)
	if changed {
		expected += b2i(prev.Owner != nil) + b2i(sv.Owner != nil)
	}
	return int64(sv.Cversion-prev.Cversion)-int64(expected) > 0
}

// missedByEpoch is whether an election went unseen between prev and sv,
// told by the system's epoch; known is false unless both views carry one.
// The epoch counts the elections exactly: one more than the two views show
// (a new owner in sv is one) was missed. An epoch that went back says the
// system's data was replaced (restored, or another cluster's): nothing
// then counts what happened in between.
func missedByEpoch(prev View, sv SingleView) (gap, known bool) {
	if !prev.epochKnown || !sv.EpochKnown {
		return false, false
	}
	seen := int64(0) // elections the two views show
	if ownerNode(prev.Owner) != ownerNode(sv.Owner) && sv.Owner != nil {
		seen = 1
	}
	d := sv.Epoch - prev.epoch
	return d < 0 || d > seen, true
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// suspended says Unknown once and waits for the session to change state.
func (ob *singleObservation) suspended(ctx context.Context, changed <-chan struct{}) error {
	held := ob.s.Answered() // first: see observation.vouched
	if ob.watch == nil || len(ob.watch) > 0 {
		held = time.Time{} // it fired, or was never set
	}
	if c, ok := ob.unseen(held); ok {
		ob.watch = nil
		if !ob.emit(ctx, []Change{c}) {
			return errStop
		}
	}
	select {
	case <-changed:
		return nil
	case <-ctx.Done():
		ob.o.finish(ctx.Err())
		return errStop
	}
}

// readFailed decides what a failed read means (see readEnds).
func (ob *singleObservation) readFailed(ctx context.Context, err error) error {
	if readEnds(ctx, err, ob.r.path, ob.o.finish) {
		return errStop
	}
	return nil
}

// await waits for the node's watch (its deletion, a write to it, or its
// creation) or a change of the session's state.
func (ob *singleObservation) await(ctx context.Context, changed <-chan struct{}) error {
	select {
	case <-ob.watch:
		ob.watch = nil
	case <-changed:
	case <-ctx.Done():
		ob.o.finish(ctx.Err())
		return errStop
	}
	return nil
}

func (ob *singleObservation) emit(ctx context.Context, cs []Change) bool {
	return ob.o.emit(ctx, cs)
}

func (ob *singleObservation) setLast(sv SingleView) {
	ob.prev = &sv
	v := sv.view()
	ob.o.Observer.mu.Lock()
	ob.o.Observer.last = &v
	ob.o.Observer.mu.Unlock()
	ob.o.mu.Lock()
	ob.o.leader = &sv
	ob.o.mu.Unlock()
}
