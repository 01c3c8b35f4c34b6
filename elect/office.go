package elect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// A herald group keeps two persistent nodes beside its queue. Their names
// end without a sequence, so every recipe (herald's and others') ignores
// them when it orders the queue:
//
//   - herald-office: who took office (the leader acknowledgment) and why
//     the last leader let go (see deleteOwn). Only elections have one.
//   - herald-checkpoint: the last progress a leader published.
//
// Every write to them is fenced: a multi that first checks our own queue
// node exists. Our node exists only while we own the group (it is the
// lowest, and sequence numbers only grow), so a deposed owner's write fails.
const (
	OfficeNode     = "herald-office"
	CheckpointNode = "herald-checkpoint"
)

// Office is the content of the herald-office node.
type Office struct {
	Herald   int      `json:"herald"`
	Ack      *Ack     `json:"ack,omitempty"`
	Released *Release `json:"released,omitempty"`
}

// Ack records that an owner finished its leader procedure.
type Ack struct {
	Node string    `json:"node"`
	ID   string    `json:"id"`
	Term int64     `json:"term"`
	Time time.Time `json:"time"`
	Info string    `json:"info,omitempty"`
}

// Release records an end of ownership that an observer could not tell
// from the release mark alone (see OfficeNode).
type Release struct {
	Node   string    `json:"node"`
	ID     string    `json:"id"`
	Term   int64     `json:"term"`
	Reason Reason    `json:"reason"`
	Time   time.Time `json:"time"`
	// Vouches: the owner started its work only once the work of every
	// owner before it had stopped (see Handle.Vouch), so the record
	// vouches for those owners too. Without it, it vouches for its own
	// owner's work only.
	Vouches bool `json:"vouches,omitempty"`
	// Held is how long the owner held, by its own clock, when it released
	// (none for a record written later, such as RecordStopped's): every
	// owner before it was gone at least that long before the release.
	Held time.Duration `json:"held,omitempty"`
}

// Checkpoint is the last progress a leader published (seed 004).
type Checkpoint struct {
	Term int64     `json:"term"`
	Node string    `json:"node"`
	ID   string    `json:"id"`
	Time time.Time `json:"time"`
	Data []byte    `json:"data"`
	// Version is the znode version (how many checkpoints were written).
	Version int32 `json:"-"`
}

// ErrNoSideNodes: herald keeps no office or checkpoint in a group where
// go-zookeeper's Lock may queue, because that Lock fails (and leaves its
// node behind) on any child whose name does not end in a number.
var ErrNoSideNodes = errors.New("elect: herald keeps no office or checkpoint in this group")

// sideNodesRefused says why herald may not create herald-office or
// herald-checkpoint beside the owner node, nil when it may: in a lock's
// group, and in an election whose nodes are named for Curator's mutex and
// go-zookeeper (DialectCuratorLock), go-zookeeper's Lock may queue.
func sideNodesRefused(group, owner string) error {
	id, d, ok := heraldNode(owner)
	switch {
	case !ok:
		return nil // a node herald did not name: the caller knows its group
	case id.recipe == RecipeLock:
		return fmt.Errorf("%w: %s is a lock, which go-zookeeper's Lock may share; it fails on any child without a sequence", ErrNoSideNodes, group)
	case d == DialectCuratorLock:
		return fmt.Errorf("%w: %s is an election named for Curator's mutex and go-zookeeper (%s), whose Lock fails on any child without a sequence", ErrNoSideNodes, group, d)
	}
	return nil
}

// laterTerm is the term of a record in o written by an owner newer than
// term, 0 when there is none.
func (o Office) laterTerm(term int64) (int64, string) {
	switch {
	case o.Ack != nil && o.Ack.Term > term:
		return o.Ack.Term, o.Ack.Node
	case o.Released != nil && o.Released.Term > term:
		return o.Released.Term, o.Released.Node
	}
	return 0, ""
}

// decodeOffice reads an office node's data (st its stat) as herald writes
// it, and refuses anything else: data without herald's marker, and a
// record whose term is not older than the write that stored it (a term is
// its owner node's czxid, so herald's never is), which would otherwise
// depose every leader.
func decodeOffice(b []byte, st *zk.Stat) (Office, bool) {
	var o Office
	if len(b) == 0 || json.Unmarshal(b, &o) != nil || o.Herald == 0 {
		return Office{}, false
	}
	if st != nil && (o.Ack != nil && o.Ack.Term >= st.Mzxid || o.Released != nil && o.Released.Term >= st.Mzxid) {
		return Office{}, false
	}
	return o, true
}

// deleteOwn deletes an owner's node, and nothing else ever touches a queue
// node: every recipe's predecessor watch fires NodeDeleted, the one event
// they all act on. Why the owner went is recorded where no waiter looks:
// a resignation or release writes herald's mark on the group node in the
// same transaction (see groupMark; observers read it from the parent stat
// of their listing, at no cost); an election's owner that gives up for
// another reason records it in the office node, and where the group may
// hold no office (a lock, see sideNodesRefused) in the mark, written
// twice. Where herald may write neither, it just deletes.
//
// tenure is how long the owner held; seen, when not nil, is the group
// node as the owner read it during its tenure (see deleteMarked).
func (q *queue) deleteOwn(ctx context.Context, t ticket, rec *Release, office *atomic.Bool, tenure time.Duration, seen *groupData) error {
	switch {
	case rec == nil:
		return q.remove(ctx, t.name, ReasonUnknown)
	case voluntary(rec.Reason):
		return q.deleteMarked(ctx, t, rec, 1, tenure, office, seen)
	case sideNodesRefused(q.parent, t.name) != nil:
		return q.deleteMarked(ctx, t, rec, 2, tenure, nil, seen)
	}
	return q.deleteRecorded(ctx, t.name, rec, office)
}

// markRecheckAfter is the tenure after which an owner reads the group
// node before it writes its mark, rather than trust the version it expects
// there (see deleteMarked).
const markRecheckAfter = time.Second

// deleteMarked deletes t's node and writes the release on the group node,
// when herald may write it: writes times in the one transaction, once for
// a resignation or release, twice for any other reason (see groupMark).
// The writes are version-checked against the version t expects the group
// node to have (see ticket.markVersion): when someone else wrote the group
// node since (an operator's set), or the expectation was a guess that
// missed, the transaction fails whole, and the owner reads the group node.
// A busy lock pays no read for it.
//
// Over data someone else keeps on the group node, the owner writes that
// data back as it read it, unchanged, twice. The next owner expects one
// write of this release; a single foreign write made after its listing
// would otherwise match that expectation exactly (this owner writing
// nothing), and its mark would land over the foreign data. Two writes
// never match it, whether the foreign write came before the next owner's
// listing or after, so the next owner reads too; and observers, seeing
// the version move by two, read the group node, find no mark, and report
// the release without a mark. (A predecessor that left
// without writing, its session expired, still leaves that match open; an
// owner that held for markRecheckAfter or more reads the group node
// first, so only a tenure shorter than that, following such a
// coincidence, can overwrite. That read is made a second into the tenure,
// with a watch, off the handoff's path (see Handle.readMark): seen is what
// it read, still current as far as the owner knows, and the release uses
// it as the read it would make; should anyone have written since, the
// version check fails the transaction, and the owner reads.) An
// election's owner (office not nil, and
// the group may hold an office) records the release in its office then,
// in the same transaction: the next herald owner finds it
// (PredecessorReleased), and starts its command at once rather than
// after the bound kept for a node deleted by hand, and observers report
// the reason.
func (q *queue) deleteMarked(ctx context.Context, t ticket, rec *Release, writes int, tenure time.Duration, office *atomic.Bool, seen *groupData) error {
	if q.markState() == markDenied {
		return q.deleteUnmarked(ctx, t.name, rec, office)
	}
	data, n := q.releaseMark(rec), writes
	version, known := t.markVersion, t.markKnown && q.markKnownHerald() && tenure < markRecheckAfter
	foreign, officeOK := false, office != nil // and the group may hold one: asked when foreign
	for tries := 0; tries < 6; tries++ {
		if !known {
			b, v, ok, err := q.readOrSeen(ctx, seen)
			seen = nil // a retry reads
			if err != nil {
				return err
			}
			if !ok {
				return q.removeRecord(ctx, t.name, rec)
			}
			data, n, version, known, foreign = q.releaseMarkOver(rec, b), writes, v, true, false
			if !markable(b) {
				data, n, foreign = b, 2, true // someone else's: written back as it is
			}
		}
		ops := []any{&zk.DeleteRequest{Path: q.full(t.name), Version: -1}}
		ops = append(ops, markWrites(q.parent, data, version, n)...)
		if foreign && officeOK && sideNodesRefused(q.parent, t.name) != nil {
			officeOK = false
		}
		recorded := foreign && officeOK
		if recorded {
			ops = append(ops, q.officeRecord(ctx, rec, office))
		}
		live := ""
		if foreign && !recorded {
			// No mark and no office: our session node, if any, takes
			// the reason (see sessionNote).
			if live = q.ownSessionNode(t.name); live != "" {
				ops = append(ops, sessionNoteWrite(live, q.parent, t.name, rec.Reason, rec.Vouches))
			}
		}
		res, err := multi(ctx, q.s.Conn(), ops...)
		switch {
		case err == nil:
			if recorded {
				office.Store(true)
			}
			return nil
		case live != "" && (failedAt(res, 1+n, zk.ErrNoNode) || failedAt(res, 1+n, zk.ErrNoAuth)):
			q.s.ownSessionNodes.Delete(live) // it takes no note: go without
			continue
		case recorded && failedAt(res, 1+n, zk.ErrNoNode):
			office.Store(false) // gone: create it
			continue
		case recorded && failedAt(res, 1+n, zk.ErrNodeExists):
			office.Store(true)
			continue
		case recorded && failedAt(res, 1+n, zk.ErrNoAuth):
			officeOK = false // not ours to write: the mark's writes alone
			continue
		case failedAt(res, 0, zk.ErrNoNode):
			return zk.ErrNoNode
		case errors.Is(err, zk.ErrNoAuth) || failedAt(res, 1, zk.ErrNoAuth):
			// The group's ACL does not let this identity write the group
			// node (the delete alone would have passed): delete without
			// the mark.
			q.setMark(markDenied)
			return q.deleteUnmarked(ctx, t.name, rec, office)
		case failedAt(res, 1, zk.ErrBadVersion):
			known = false // someone wrote, or the guess missed: read
			continue
		}
		return err
	}
	// The group node keeps changing under us: delete without the mark.
	return q.removeRecord(ctx, t.name, rec)
}

// releaseMark is the group node's data a release writes: herald's mark
// naming the group's recipe, and rec.
func (q *queue) releaseMark(rec *Release) []byte { return q.releaseMarkOver(rec, nil) }

// releaseMarkOver is releaseMark written over the mark old, read just
// before: the nodes after rec's that withdrew stay on it (see
// groupMark.keepWithdrawn).
func (q *queue) releaseMarkOver(rec *Release, old []byte) []byte {
	m := groupMark{Herald: 1, Recipe: q.markRecipe(), Released: rec}
	m.keepWithdrawn(old)
	b, _ := json.Marshal(m)
	return b
}

// readGroupData reads the group node: its data and version, and whether
// herald may write there at all (false when the group's ACL denies it or
// the group is gone), remembering whether the data is herald's mark (or
// nothing) for later releases.
func (q *queue) readGroupData(ctx context.Context) ([]byte, int32, bool, error) {
	r, ok, err := q.readGroupNode(ctx, false)
	return r.b, r.version, ok, err
}

// readOrSeen is seen, the group node as the owner read it during its
// tenure, when there is one, else a read now.
func (q *queue) readOrSeen(ctx context.Context, seen *groupData) ([]byte, int32, bool, error) {
	if seen != nil {
		return seen.b, seen.version, true, nil
	}
	return q.readGroupData(ctx)
}

// groupData is the group node's data and version as read, and the watch
// set with the read, if one was.
type groupData struct {
	b       []byte
	version int32
	w       <-chan zk.Event
}

// readGroupNode is readGroupData, setting a data watch on the group node
// when watch is set.
func (q *queue) readGroupNode(ctx context.Context, watch bool) (groupData, bool, error) {
	r, err := call(ctx, func() (groupData, error) {
		if watch {
			b, st, w, err := q.s.Conn().GetW(q.parent)
			if err != nil {
				return groupData{}, err
			}
			return groupData{b: b, version: st.Version, w: w}, nil
		}
		b, st, err := q.s.Conn().Get(q.parent)
		if err != nil {
			return groupData{}, err
		}
		return groupData{b: b, version: st.Version}, nil
	})
	switch {
	case errors.Is(err, zk.ErrNoAuth):
		q.setMark(markDenied)
		return groupData{}, false, nil
	case errors.Is(err, zk.ErrNoNode):
		return groupData{}, false, nil // our node went with the group
	case err != nil:
		return groupData{}, false, err
	}
	if markable(r.b) {
		q.setMark(markHerald)
		if recipe, ok := recipeOf(r.b); ok {
			q.noteRecipe(recipe)
		}
	} else {
		q.setMark(markForeign)
	}
	return r, true, nil
}

// deleteUnmarked deletes name where herald may not write the group node:
// with rec in the office when it is an election's (office not nil) and
// the group may hold one, else alone.
func (q *queue) deleteUnmarked(ctx context.Context, name string, rec *Release, office *atomic.Bool) error {
	if office != nil && sideNodesRefused(q.parent, name) == nil {
		return q.deleteRecorded(ctx, name, rec, office)
	}
	return q.removeRecord(ctx, name, rec)
}

// officeRecord is the op that records rec in the office: a write of it,
// or its creation when it is not known to exist.
func (q *queue) officeRecord(ctx context.Context, rec *Release, office *atomic.Bool) any {
	data, _ := json.Marshal(Office{Herald: 1, Released: rec})
	if office.Load() {
		return &zk.SetDataRequest{Path: q.full(OfficeNode), Data: data, Version: -1}
	}
	return &zk.CreateRequest{Path: q.full(OfficeNode), Data: data, Acl: q.sideACL(ctx)}
}

// deleteRecorded deletes name and records rec in the office node, creating
// the office when it is missing. Where the office may not be written (its
// ACL, or the group's for its creation), name is deleted alone.
//
// It also writes the group node's data back, unchanged, twice, for the
// reason deleteMarked does over someone else's data: the next owner
// expects one write of this release there, and an operator's write made
// right after its listing would otherwise match that exactly, and a brief
// next tenure would write its mark over it. Where herald may not write the
// group node, the office record goes alone.
func (q *queue) deleteRecorded(ctx context.Context, name string, rec *Release, office *atomic.Bool) error {
	conn := q.s.Conn()
	// The record replaces the office's content without reading it first:
	// any ack in it is ours or a predecessor's, and ends with our release.
	writeBack := q.markState() != markDenied
	for tries := 0; tries < 6; tries++ {
		ops := []any{&zk.DeleteRequest{Path: q.full(name), Version: -1}, q.officeRecord(ctx, rec, office)}
		if writeBack {
			b, v, ok, err := q.readGroupData(ctx)
			switch {
			case err != nil:
				return err
			case ok:
				ops = append(ops, markWrites(q.parent, b, v, 2)...)
			default:
				writeBack = false // denied, or the group is gone
			}
		}
		res, err := multi(ctx, conn, ops...)
		switch {
		case err == nil:
			office.Store(true)
			return nil
		case failedAt(res, 0, zk.ErrNoNode):
			return zk.ErrNoNode
		case failedAt(res, 1, zk.ErrNoNode):
			office.Store(false)
		case failedAt(res, 1, zk.ErrNodeExists):
			office.Store(true)
		case writeBack && failedAt(res, 2, zk.ErrBadVersion):
			// Someone wrote the group node meanwhile: read it again.
		case writeBack && failedAt(res, 2, zk.ErrNoAuth):
			q.setMark(markDenied)
			writeBack = false
		case errors.Is(err, zk.ErrNoAuth) || failedAt(res, 1, zk.ErrNoAuth):
			return q.removeRecord(ctx, name, rec)
		default:
			return err
		}
	}
	// The office keeps changing under us: delete without a record.
	return q.removeRecord(ctx, name, rec)
}

// Acknowledge records that we took office (seed 002: the lowest node does
// not by itself mean its owner knows it leads). Observers turn it into
// leader.ready. info is free text (e.g. the child command's pid).
func (h *Handle) Acknowledge(ctx context.Context, info string) error {
	term, err := h.heldTerm(ctx)
	if err != nil {
		return err
	}
	if err := sideNodesRefused(h.q.parent, h.t.name); err != nil {
		return err
	}
	conn := h.q.s.Conn()
	for {
		b, st, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return conn.Get(h.q.full(OfficeNode)) })
		var prev Office
		exists := err == nil
		switch {
		case err == nil:
			prev, _ = decodeOffice(b, st)
		case errors.Is(err, zk.ErrNoNode):
		default:
			return h.fenceErr(err)
		}
		if later, writer := prev.laterTerm(term); later != 0 {
			if !h.fenceAt(term).foreign(ctx, h.q.s, writer) {
				return fmt.Errorf("%w: term %d of %s already wrote the office, so %s (term %d) is deposed", ErrNotLeader, later, h.q.parent, h.t.name, term)
			}
			prev = Office{} // copied from another group (see foreign): not this one's
		}
		next := Office{Herald: 1, Released: prev.Released,
			Ack: &Ack{Node: h.t.name, ID: h.id, Term: term, Time: time.Now().UTC(), Info: info}}
		data, _ := json.Marshal(next)
		var op any = &zk.CreateRequest{Path: h.q.full(OfficeNode), Data: data, Acl: h.q.sideACL(ctx)}
		if exists {
			op = &zk.SetDataRequest{Path: h.q.full(OfficeNode), Data: data, Version: st.Version}
		}
		res, err := h.fenced(ctx, op)
		switch {
		case err == nil:
			h.office.Store(true)
			return nil
		case failedAt(res, 1, zk.ErrBadVersion), failedAt(res, 1, zk.ErrNodeExists), failedAt(res, 1, zk.ErrNoNode):
			continue // raced with another write of the office: read again
		default:
			return err
		}
	}
}

// Checkpoint publishes progress, fenced by our ownership: the write fails
// with ErrNotLeader once we are deposed. The next owner reads it with
// ReadCheckpoint and resumes from there.
func (h *Handle) Checkpoint(ctx context.Context, data []byte) error {
	term, err := h.heldTerm(ctx)
	if err != nil {
		return err
	}
	return h.fenceAt(term).Checkpoint(ctx, h.q.s, data)
}

// heldTerm is our term while we own, and ErrNotLeader once ownership has
// ended, including when it ended before the term was learned (Term is 0):
// no record then carries a term of 0. It waits for the term (see Term) no
// longer than ctx.
func (h *Handle) heldTerm(ctx context.Context) (int64, error) {
	select {
	case <-h.termKnown:
	case <-h.done:
	case <-ctx.Done():
		return 0, fmt.Errorf("elect: the term of %s is not known yet (the read of its node has not been answered; the connection may be down): %w", h.t.name, ctx.Err())
	}
	t := h.Term()
	if t == 0 || !h.Held() {
		return 0, fmt.Errorf("%w: %s no longer owns %s (%s)", ErrNotLeader, h.t.name, h.q.parent, h.Reason())
	}
	return t, nil
}

// Fence names an owner's node; writes through it succeed only while that
// node exists, whichever session makes them. It lets a helper process (the
// child of herald run) write on behalf of its leader: the servers check the
// leader's node in the same transaction.
type Fence struct {
	Group string `json:"group"`
	Node  string `json:"node"`
	ID    string `json:"id"`
	Term  int64  `json:"term"`
}

// Fence returns the handle's fence.
func (h *Handle) Fence() Fence { return h.fenceAt(h.Term()) }

func (h *Handle) fenceAt(term int64) Fence {
	return Fence{Group: h.q.parent, Node: h.t.name, ID: h.id, Term: term}
}

// Validate says what is wrong with a fence taken from the environment.
func (f Fence) Validate() error {
	if err := ValidatePath(f.Group); err != nil {
		return err
	}
	if _, ok := ParseSequence(f.Node); !ok || strings.Contains(f.Node, "/") {
		return fmt.Errorf("elect: fence node %q is not a queue node name", f.Node)
	}
	if f.Term <= 0 {
		// A handle that ended before its term was known gives 0 (Term):
		// no owner writes with it.
		return fmt.Errorf("%w: fence term %d is not an owner's term (the owner node's czxid, > 0)", ErrNotLeader, f.Term)
	}
	return nil
}

// Checkpoint writes data as the group's checkpoint, fenced twice: the
// write is a multi that first checks f's node still exists, and it is
// version-checked against the checkpoint f read, which must carry no later
// term than f's. So once a newer owner has written, an older one never
// can, even if its node still exists.
func (f Fence) Checkpoint(ctx context.Context, s *Session, data []byte) error {
	if s == nil {
		return errNilSession
	}
	if err := f.Validate(); err != nil {
		return err
	}
	if err := sideNodesRefused(f.Group, f.Node); err != nil {
		return err
	}
	rec, _ := json.Marshal(Checkpoint{Term: f.Term, Node: f.Node, ID: f.ID, Time: time.Now().UTC(), Data: data})
	p := f.Group + "/" + CheckpointNode
	for tries := 0; tries < 8; tries++ {
		cur, err := f.readCheckpoint(ctx, s)
		if err != nil {
			return err
		}
		var op any
		if cur.exists {
			op = &zk.SetDataRequest{Path: p, Data: rec, Version: cur.version}
		} else {
			op = &zk.CreateRequest{Path: p, Data: rec, Acl: checkpointACL(ctx, s, f.Group)}
		}
		res, err := f.multi(ctx, s, op)
		switch {
		case err == nil:
			return nil
		case connLoss(err) && ctx.Err() == nil:
			// Read again after reconnecting: a lost reply may hide our
			// own write, which the next read shows with our term.
			if err := s.awaitConnected(ctx); err != nil {
				return fmt.Errorf("elect: checkpoint of %s: %w", f.Group, err)
			}
		case failedAt(res, 1, zk.ErrNoNode), failedAt(res, 1, zk.ErrNodeExists), failedAt(res, 1, zk.ErrBadVersion):
			// Another write came between our read and ours: read again.
		default:
			return err
		}
	}
	return fmt.Errorf("elect: checkpoint of %s kept racing with other writes", f.Group)
}

// checkpointRead is the checkpoint as a fenced writer last saw it.
type checkpointRead struct {
	exists  bool
	version int32
}

// readCheckpoint reads the group's checkpoint and refuses when a term
// later than f's wrote it.
func (f Fence) readCheckpoint(ctx context.Context, s *Session) (checkpointRead, error) {
	b, st, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return s.Conn().Get(f.Group + "/" + CheckpointNode) })
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return checkpointRead{}, nil
	case err != nil && expired(err):
		return checkpointRead{}, fmt.Errorf("%w: session expired: %v", ErrNotLeader, err)
	case err != nil:
		return checkpointRead{}, err
	}
	if c, err := decodeCheckpoint(b, st); err == nil && c.Term > f.Term && !f.foreign(ctx, s, c.Node) {
		return checkpointRead{}, fmt.Errorf("%w: term %d of %s already wrote the checkpoint, so %s (term %d) is deposed", ErrNotLeader, c.Term, f.Group, f.Node, f.Term)
	}
	return checkpointRead{exists: true, version: st.Version}, nil
}

// hasSequence reports whether name ends in a ZooKeeper sequence, as every
// queue node's does.
func hasSequence(name string) bool {
	_, ok := ParseSequence(name)
	return ok
}

// foreign reports whether a record naming a later term than f's, written
// by writer, cannot be this group's: f's node, with f's term, exists and
// owns the group now, and writer is no node of the group. A node made
// after ours sorts after it, so it never owned while ours existed; a
// record it wrote while it is still there is a second owner's (a client
// that cannot see our node), which deposes us as any later term does.
// One whose writer is nowhere in the group was copied from another group
// or written by hand: the owner's write replaces it rather than take it
// for its deposition (which stopped a live leader's every save).
func (f Fence) foreign(ctx context.Context, s *Session, writer string) bool {
	c := s.Conn()
	_, st, err := call2(ctx, func() (bool, *zk.Stat, error) { return c.Exists(f.Group + "/" + f.Node) })
	if err != nil || st == nil || st.Czxid != f.Term || f.owns(ctx, s) != nil {
		return false
	}
	there, _, err := call2(ctx, func() (bool, *zk.Stat, error) { return c.Exists(f.Group + "/" + writer) })
	return err == nil && !there
}

// owns checks that the fence's node owns its group: the lowest node, or
// the group's owner as ReadGroup reads it when suspect nodes sort lower.
// A waiter's node exists too, and carries a later term than the owner's: a
// fence made from it (a stale or mistaken environment) would otherwise
// write, and every later write of the real owner be refused as older.
// Lowest at this listing and still there at the write means owner at the
// write: sequence numbers only grow, so no lower node can appear.
func (f Fence) owns(ctx context.Context, s *Session) error {
	type listing struct {
		c  []string
		st *zk.Stat
	}
	got, err := call(ctx, func() (listing, error) {
		c, st, err := s.Conn().Children(f.Group)
		return listing{c, st}, err
	})
	if err != nil {
		return err
	}
	es := parseChildren(got.c, got.st.Cversion)
	if len(es) > 0 && es[0].name == f.Node {
		return nil
	}
	// A node below ours may be one that cannot be what its name says
	// (suspect: made by hand, held by no session, or younger than the
	// owner): the group's reading decides.
	v, err := ReadGroup(ctx, s, f.Group)
	if err != nil {
		return err
	}
	if v.Owner != nil && v.Owner.Node == f.Node {
		return nil
	}
	owner := "nobody"
	if v.Owner != nil {
		owner = v.Owner.Node
	}
	return fmt.Errorf("%w: %s does not own %s (%s does): it waits, or its owner went", ErrNotLeader, f.Node, f.Group, owner)
}

// multi runs op after a check that the fence's node still exists, with the
// term checked too: a node of the same name cannot come back, but a fence
// from a stale environment must not pass for a newer owner.
func (f Fence) multi(ctx context.Context, s *Session, op any) ([]zk.MultiResponse, error) {
	node := f.Group + "/" + f.Node
	st, err := call(ctx, func() (*zk.Stat, error) {
		ok, st, err := s.Conn().Exists(node)
		if err == nil && !ok {
			return nil, zk.ErrNoNode
		}
		return st, err
	})
	if errors.Is(err, zk.ErrNoNode) || err == nil && st.Czxid != f.Term {
		return nil, fmt.Errorf("%w: %s is gone, so %s belongs to someone else now", ErrNotLeader, node, f.Group)
	}
	if err != nil {
		return nil, err
	}
	if err := f.owns(ctx, s); err != nil {
		return nil, err
	}
	res, err := multi(ctx, s.Conn(), &zk.CheckVersionRequest{Path: node, Version: -1}, op)
	if err != nil && failedAt(res, 0, zk.ErrNoNode) {
		return res, fmt.Errorf("%w: %s is gone, so %s belongs to someone else now", ErrNotLeader, node, f.Group)
	}
	if err != nil && len(res) == 0 && expired(err) {
		return res, fmt.Errorf("%w: session expired: %v", ErrNotLeader, err)
	}
	return res, err
}

// fenced runs op in a multi after a check that our node still exists.
func (h *Handle) fenced(ctx context.Context, op any) ([]zk.MultiResponse, error) {
	res, err := multi(ctx, h.q.s.Conn(), &zk.CheckVersionRequest{Path: h.NodePath(), Version: -1}, op)
	if err != nil && failedAt(res, 0, zk.ErrNoNode) {
		return res, fmt.Errorf("%w: %s is gone, so %s belongs to someone else now", ErrNotLeader, h.NodePath(), h.q.parent)
	}
	if err != nil && len(res) == 0 {
		return res, h.fenceErr(err)
	}
	return res, err
}

func (h *Handle) fenceErr(err error) error {
	if expired(err) {
		return fmt.Errorf("%w: session expired, so %s is gone: %v", ErrNotLeader, h.NodePath(), err)
	}
	return err
}

// ReadCheckpoint returns a group's last checkpoint (ErrNoCheckpoint when
// none was written yet, ErrBadCheckpoint when its node holds something
// else), after the session's server caught up with the
// leader (see catchUp), so that it is the last checkpoint written, not a
// lagging server's copy.
func ReadCheckpoint(ctx context.Context, s *Session, group string) (Checkpoint, error) {
	if s == nil {
		return Checkpoint{}, errNilSession
	}
	if err := ValidatePath(group); err != nil {
		return Checkpoint{}, err
	}
	if err := catchUp(ctx, s, group); err != nil {
		return Checkpoint{}, err
	}
	b, st, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return s.Conn().Get(group + "/" + CheckpointNode) })
	if errors.Is(err, zk.ErrNoNode) {
		// A mistyped path and an election that never saved look alike;
		// tell them apart for whoever reads the error.
		if ok, _, xerr := call2(ctx, func() (bool, *zk.Stat, error) { return s.Conn().Exists(group) }); xerr == nil && !ok {
			return Checkpoint{}, fmt.Errorf("%w: %s does not exist in ZooKeeper; check the path", ErrNoCheckpoint, group)
		}
		return Checkpoint{}, fmt.Errorf("%w in %s", ErrNoCheckpoint, group)
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("read %s/%s: %w", group, CheckpointNode, err)
	}
	c, err := decodeCheckpoint(b, st)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %s/%s holds %d bytes someone else wrote (%v); the leader's next checkpoint replaces them, or delete the node to start afresh", ErrBadCheckpoint, group, CheckpointNode, len(b), err)
	}
	return c, nil
}

// decodeCheckpoint reads a checkpoint node's data as herald writes it, and
// refuses anything else, so that a record someone else wrote is neither
// passed off as progress nor taken for a later term that deposes every
// leader: a herald checkpoint names its writer's node and when it wrote,
// and its term (that node's czxid) is older than the write that stored it
// (st.Mzxid).
func decodeCheckpoint(b []byte, st *zk.Stat) (Checkpoint, error) {
	var c Checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return Checkpoint{}, err
	}
	switch {
	case c.Node == "" || c.Term <= 0 || c.Time.IsZero():
		return Checkpoint{}, errors.New("it names no writer's node, term and time")
	case !hasSequence(c.Node):
		return Checkpoint{}, fmt.Errorf("its writer %q is no queue node's name", c.Node)
	case c.Term >= st.Mzxid:
		return Checkpoint{}, fmt.Errorf("its term %d is not older than the write that stored it (zxid %d)", c.Term, st.Mzxid)
	}
	c.Version = st.Version
	return c, nil
}

// ReadOffice returns a group's office record (ok=false when there is none).
func ReadOffice(ctx context.Context, s *Session, group string) (Office, bool, error) {
	if s == nil {
		return Office{}, false, errNilSession
	}
	b, st, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return s.Conn().Get(group + "/" + OfficeNode) })
	if errors.Is(err, zk.ErrNoNode) {
		return Office{}, false, nil
	}
	if err != nil {
		return Office{}, false, err
	}
	o, ok := decodeOffice(b, st)
	return o, ok, nil
}

func multi(ctx context.Context, c *zk.Conn, ops ...any) ([]zk.MultiResponse, error) {
	return call(ctx, func() ([]zk.MultiResponse, error) { return c.Multi(ops...) })
}

// markWrites are n writes, for one transaction, of data over the group
// node at path, whose data version is version. herald writes its mark
// twice for every release but a resignation (and for a note, or someone
// else's data written back), so that an observer that sees the version
// move by two reads the mark rather than take the write for a release
// (see reader.readRelease).
func markWrites(path string, data []byte, version int32, n int) []any {
	ops := make([]any, n)
	for i := range ops {
		ops[i] = &zk.SetDataRequest{Path: path, Data: data, Version: version + int32(i)}
	}
	return ops
}

// failedAt reports whether op i of a multi failed with want.
func failedAt(res []zk.MultiResponse, i int, want error) bool {
	return i < len(res) && errors.Is(res[i].Error, want)
}

// sideACL is the ACL of a side node (the office, the checkpoint) the queue
// creates in its group: see sideACL.
func (q *queue) sideACL(ctx context.Context) []zk.ACL {
	return sideACL(ctx, q.s, q.parent, q.o.acl, q.o.aclSet || q.s.acl != nil)
}

// checkpointACL is the ACL of a checkpoint herald creates in group: a side
// node's (see sideACL), but under digest credentials with no ACL chosen,
// without the READ for everyone that herald's other nodes keep so that
// observers can watch them. Nobody watches a checkpoint, and it holds the
// leaders' own state, which only the identities that may lead should read.
func checkpointACL(ctx context.Context, s *Session, group string) []zk.ACL {
	acl := sideACL(ctx, s, group, s.DefaultACL(), s.acl != nil)
	if s.acl != nil || s.digestACL == nil {
		return acl
	}
	return slices.DeleteFunc(slices.Clone(acl), func(a zk.ACL) bool {
		return a.Scheme == "world" && a.ID == "anyone" && a.Perms == zk.PermRead
	})
}

// sideACL is the ACL of a side node created in group: acl, and unless it
// was chosen (chosen: WithACL, WithDefaultACL), every identity the
// group's own ACL names too, with the permissions it has on the group. An
// operator who makes a group for several identities (each herald's
// default ACL lets only its own identity write) so lets every one of them
// keep the office and the checkpoints, which the first leader's identity
// alone could write before. It costs a read of the group's ACL, made only
// when the node is created; should that read fail, acl alone is used.
func sideACL(ctx context.Context, s *Session, group string, acl []zk.ACL, chosen bool) []zk.ACL {
	if chosen {
		return acl
	}
	groupACL, err := call(ctx, func() ([]zk.ACL, error) {
		a, _, err := s.Conn().GetACL(group)
		return a, err
	})
	if err != nil {
		return acl
	}
	out := slices.Clone(acl)
	for _, g := range groupACL {
		i := slices.IndexFunc(out, func(a zk.ACL) bool { return a.Scheme == g.Scheme && a.ID == g.ID })
		if i < 0 {
			out = append(out, g)
			continue
		}
		out[i].Perms |= g.Perms
	}
	return out
}
