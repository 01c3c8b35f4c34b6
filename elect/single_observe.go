package elect

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect/ident"
)

// ObserveSingle streams the changes of a single-node leader at p, with the
// same contract as Observe: a Snapshot first, OwnerChanged when the node
// goes (Owner nil) or appears (Previous nil) or both between two reads,
// Unknown when the connection is lost and a fresh Snapshot once it is
// back, Gap when an owner may have come and gone unseen. It needs one
// watch, on the node. ObserveOption's Buffer, AsRecipe, WithRecipeRules,
// Since, AfterOwner (or AfterReport), ReportEpoch and EpochRecheck apply.
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
	oo := observeOptions{buffer: 64, epochRecheck: DefaultEpochRecheck}
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
	st := singleState{r: singleReader{conn: s.Conn(), path: p, parent: path.Dir(p), sn: sn, recipe: oo.recipe, crumb: crumbOf(sn.Format, p)}, recheck: oo.epochRecheck}
	switch {
	case oo.since != nil:
		st.before = &singleBefore{view: *oo.since}
		if v := oo.since; !v.Exists && v.parentKnown {
			// Its parent was missing: the first read counts its making
			// where that view did (see ancestorOf).
			st.r.parentMissing, st.r.missingUp = true, v.anchorUp
		}
	case oo.after != nil:
		v := *oo.after
		v.Group = p
		if oo.reportEpoch != nil && sn.EpochPath != "" {
			v.epoch = &viewEpoch{value: *oo.reportEpoch}
		}
		st.before = &singleBefore{view: v}
	}
	if st.before != nil && st.before.view.Owner != nil {
		st.r.reported, st.r.reportedID = st.before.view.Owner.Node, st.before.view.Owner.ID
		st.r.reportedSeen = st.before.view.mzxid
		if oo.since == nil {
			st.r.reportedID, st.r.reportedSeen = oo.reportID, st.before.view.Pzxid
		}
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
	r    singleReader
	prev *SingleView
	// readAt is when the newest read of the node was answered (see
	// observation.listedAt).
	readAt time.Time
	before *singleBefore
	// pendingGap: a read showed no new owner, but an election went
	// unseen; the next change carries Gap.
	pendingGap bool
	// recheck is how often ObserveSingle reads the epoch node between
	// changes (EpochRecheck).
	recheck time.Duration
}

type singleObservation struct {
	singleState
	o     *SingleObserver
	s     *Session
	watch <-chan zk.Event
	// pwatch is the parent's watch (singleWatch.parent), nil for none.
	pwatch <-chan zk.Event
	lateMark
}

func (ob *singleObservation) run(ctx context.Context) {
	ob.o.loop(ctx, ob.s, ob.suspended, ob.step)
}

// step reads the node, emits what changed and waits for its watch.
func (ob *singleObservation) step(ctx context.Context, changed <-chan struct{}) error {
	ob.takeFired()
	ob.reading(ob.s)
	cctx, cancel := stateCtx(changed, ctx.Done())
	sv, ch, err := ob.r.read(cctx, true)
	cancel()
	ob.readAt = time.Now() // answered (see observation.read)
	if err != nil {
		return ob.readFailed(ctx, err)
	}
	// The node's watch the last read set: not fired yet, nothing was
	// made there before this read was answered (see parentGoneUnseen).
	sv.nodeQuiet = ob.watch != nil && len(ob.watch) == 0
	ob.watch, ob.pwatch = ch.node, ch.parent
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
			// A tenure kept through a write that may be a re-election
			// (restartGap) may hide the tenures between: a gap, not a
			// new tenure invented, nor one lost unmarked.
			c.Gap = st.pendingGap || st.before.missed(sv) || sv.restartGap
			if b := st.before.view; b.Owner != nil && b.heldAsOf != 0 && ownerNode(b.Owner) != ownerNode(sv.Owner) {
				c.Before, c.BeforeHeld = b.Owner, nsTime(b.heldAsOf)
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
	if sv.Note() != st.prev.Note() && (sv.Owner == nil || sv.EpochErr != st.prev.EpochErr) {
		// Still nobody holds it, but why changed: a node not taken for a
		// leader's (an operator's, a persistent copy) appeared or went;
		// or the owner's epoch became known, or unknown for another
		// reason (an ACL fixed). Without a change its note reached
		// readers only with the next snapshot, so the group is stated
		// afresh.
		c := singleSnapshot(sv)
		c.Gap, st.pendingGap = st.pendingGap, false
		return []Change{c}
	}
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
	if held.Before(st.readAt) { // see observation.unseen
		held = time.Time{}
	}
	prev := *st.prev
	st.before = &singleBefore{view: prev.view(), epoch: &prev}
	st.before.view.heldAsOf = unixNs(held)
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
		// that rewrites it) since. A parent gone since took its counters
		// with it: its zxid reads 0, and an owner reported, or a parent
		// there at the report (zxid not 0), may have been followed by
		// another before it went.
		return sv.zxid() > v.Pzxid || !sv.ParentExists && (v.Owner != nil || v.Pzxid > 0)
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
		return parentGoneUnseen(prev, prevSV, sv, changed)
	case !prev.Exists:
		// The parent appeared: its child version counts every create
		// and delete since it was made; only the owner's create is
		// accounted for. A parent made more than once since (made,
		// owned, deleted, made again) leaves nothing in the last one's
		// counters.
		return !parentMadeOnce(prev, prevSV, sv) || int64(sv.Cversion) > int64(b2i(sv.Owner != nil)+b2i(sv.crumb != 0))
	case prev.parentCzxid != 0 && prev.parentCzxid != sv.parentCzxid:
		// The parent was deleted and made again (a wipe): its child
		// version starts from 0 again, and nothing tells what the old
		// parent held after the first read. Compared with the old
		// parent's, the new one's smaller count hid the owners that came
		// and went.
		return true
	case prevSV != nil && !prevSV.consistent || !sv.consistent:
		return changed // the counters are not exact
	}
	// Every create and delete of the parent's children bumps its child
	// version: one delete and one create explain a new owner.
	expected := crumbChanges(prev, prevSV, sv) + nodeChanges(prev, prevSV, sv, changed)
	return int64(sv.Cversion-prev.Cversion)-int64(expected) > 0
}

// parentGoneUnseen reports, of a parent missing at sv, whether a leader
// may have come and gone unseen since prev. A parent deleted takes its
// counters with it: it may have held leaders after prev's read, unless
// the leader node's watch prev's read set stayed quiet until sv's (a
// container reaped while empty). A parent missing at both reads may have
// been made, led in and deleted between them unless the count at its
// nearest ancestor did not move: counted afresh by the second read, it
// proved the parent made once for the next leader (found by a review).
// Moved by one, it was another child's doing: the parent (or the level
// below that ancestor on its path) made and deleted moves it by two, where
// any change there (another nameservice formatted beside it) was a gap.
func parentGoneUnseen(prev View, prevSV *SingleView, sv SingleView, changed bool) bool {
	switch {
	case prev.Exists:
		return changed || !sv.nodeQuiet
	}
	cv, czxid, up, known := ancestorOf(prev, prevSV)
	return !known || !sv.gpKnown || up != sv.gpUp || czxid != sv.gpCzxid || sv.gpCv-cv < 0 || sv.gpCv-cv > 1
}

// ancestorOf is the count prev kept of its missing parent's makings (see
// parentMadeOnce): its SingleView's, or for a view from elsewhere (Since)
// the View's, which keeps it.
func ancestorOf(prev View, prevSV *SingleView) (cv int32, czxid int64, up uint8, known bool) {
	switch {
	case prevSV != nil:
		return prevSV.gpCv, prevSV.gpCzxid, prevSV.gpUp, prevSV.gpKnown
	case prev.Exists || prev.ownerOnly:
		return 0, 0, 0, false
	}
	return prev.parentCv, prev.parentCzxid, prev.anchorUp, prev.parentKnown
}

// parentMadeOnce reports, of a parent missing at prev and there at sv,
// whether it was made just once in between: its own parent's child
// version (or that of its nearest ancestor that existed, the levels below
// it each made once: see anchorAgain), read before prev proved it missing
// and after sv read it, moved by one, in the same node. Anything else
// (another child made or deleted there, a version not read) may hide a
// parent made, owned and deleted.
func parentMadeOnce(prev View, prevSV *SingleView, sv SingleView) bool {
	cv, czxid, up, known := ancestorOf(prev, prevSV)
	return known && sv.gpKnown && up == sv.gpUp && czxid == sv.gpCzxid && sv.gpCv-cv == 1
}

// nodeChanges is how many creates and deletes of the leader node the two
// reads show. With both reads at hand, the node's czxid tells it, whether
// or not the node was taken for a leader's: a persistent copy put there by
// hand and deleted again moves the parent's counter too, and counting
// owners' nodes alone made each of its writes a gap. Against a view alone,
// its owners tell.
func nodeChanges(prev View, prevSV *SingleView, sv SingleView, changed bool) int {
	if prevSV != nil {
		if prevSV.nodeCzxid == sv.nodeCzxid {
			return 0
		}
		return b2i(prevSV.nodeCzxid != 0) + b2i(sv.nodeCzxid != 0)
	}
	if !changed {
		return 0
	}
	return b2i(prev.Owner != nil) + b2i(sv.Owner != nil)
}

// missedByEpoch is whether an election went unseen between prev and sv,
// told by the system's epoch; known is false unless both views carry one.
// The epoch counts the elections exactly: one more than the two views show
// (a new owner in sv is one) was missed. An epoch that went back says the
// system's data was replaced (restored, or another cluster's): nothing
// then counts what happened in between. Nor does an epoch node written
// by someone else than an election (an operator's set): each election
// writes it once, adding one, so its data version moves as its value
// does; when they disagree, known is false and the parent's counters
// tell. Taken for a count, an epoch set back by one hid the election that
// followed it, and one set forward made a plain end a gap.
//
// The version is compared only within one epoch node: Kafka before 2.2
// made it at the first election with that election's epoch (1 at version
// 0), later ones make it with 0 before the first; either way its value
// counts the elections since it was made, and comparing versions across
// its creation made that first controller a gap. An epoch node made
// again (a cluster wiped, its data restored; or deleted, and made again
// by the next election) counts from 0 again: its value counts nothing of
// what happened in between, though it may be back at the value read,
// version and all, so known is false and the parent's counters tell (the
// epoch node counted as the sibling it is). Taken for a gap, the next
// controller after an epoch node deleted unseen was one though nothing
// went unseen. So of one deleted and not made again yet: read as an epoch
// gone back to 0, the end of the controller it was deleted under (read
// at once, before the next election makes it) was a gap.
func missedByEpoch(prev View, sv SingleView) (gap, known bool) {
	pe := prev.epoch
	if pe == nil || !sv.EpochKnown || pe.czxid != 0 && pe.czxid != sv.epochCzxid || epochMadeSinceReport(prev, sv) {
		return false, false
	}
	seen := int64(0) // elections the two views show
	if ownerNode(prev.Owner) != ownerNode(sv.Owner) && sv.Owner != nil {
		seen = 1
	}
	d := sv.Epoch - pe.value
	if d < 0 {
		return true, true
	}
	if pe.writesKnown && pe.czxid != 0 && int64(sv.epochWrites)-int64(pe.writes) != d {
		return false, false
	}
	return d > seen, true
}

// epochMadeSinceReport reports whether sv's epoch node was made after the
// report prev names (ReportEpoch: its epoch's node is not known, nor its
// writes): deleted and made again since, its value counts from 0 again
// and nothing of the report's. Taken for a count, two elections after one
// at the report's epoch 1 moved it by one: the controller in between
// passed without a gap mark. So of a report of epoch 0: a node made
// since may be the second, broker 1 elected (epoch 1) and gone before
// the node was deleted and made again for broker 2 (epoch 1 again); the
// report's zxid tells then, as without ReportEpoch (the bridge passes
// none for a report that carried epoch 0).
func epochMadeSinceReport(prev View, sv SingleView) bool {
	pe := prev.epoch
	return pe.czxid == 0 && !pe.writesKnown && sv.epochCzxid > prev.Pzxid
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// suspended says Unknown once and waits for the session to change state.
func (ob *singleObservation) suspended(ctx context.Context, changed <-chan struct{}) error {
	held := ob.s.vouchedAsOf() // first: see observation.vouched
	if ob.watch == nil || len(ob.watch) > 0 || len(ob.pwatch) > 0 {
		held = time.Time{} // it fired, or was never set
	}
	if c, ok := ob.unseen(held); ok {
		ob.watch, ob.pwatch = nil, nil
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
// creation) or a change of the session's state; with an epoch node, it
// also reads that node once per EpochRecheck interval, which no watch
// covers (epochChanged): a change there is read in full.
func (ob *singleObservation) await(ctx context.Context, changed <-chan struct{}) error {
	var tick <-chan time.Time
	if ob.r.sn.EpochPath != "" && ob.recheck > 0 {
		t := time.NewTicker(ob.recheck)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ob.watch:
			ob.watch = nil
			return nil
		case <-ob.pwatch:
			ob.pwatch = nil
			return nil
		case <-changed:
			return nil
		case <-ctx.Done():
			ob.o.finish(ctx.Err())
			return errStop
		case <-tick:
			cctx, cancel := stateCtx(changed, ctx.Done())
			again, err := epochChanged(cctx, &ob.singleState)
			cancel()
			if again || err != nil {
				return nil // the full read says what, or why it fails
			}
		}
	}
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
