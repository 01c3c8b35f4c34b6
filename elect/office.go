package elect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	data, withdrawn := q.releaseMark(rec, t.aboveGone)
	n := marksWritten(writes, withdrawn)
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
			data, withdrawn = q.releaseMarkOver(rec, b, t.aboveGone)
			n, version, known, foreign = marksWritten(writes, withdrawn), v, true, false
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
			ops, live = q.withSessionNote(ops, t.name, rec)
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

// withSessionNote adds to ops, for a release of our node name that writes
// neither a mark nor an office record, the note of its reason on our
// session node, if we keep one (see sessionNote); live is that node ("":
// none).
func (q *queue) withSessionNote(ops []any, name string, rec *Release) (_ []any, live string) {
	if live = q.ownSessionNode(name); live != "" {
		ops = append(ops, sessionNoteWrite(live, q.parent, name, rec.Reason, rec.Vouches, q.s.Timeout(), q.o.waits))
	}
	return ops, live
}

// marksWritten is how many times a release writes its mark: writes, or
// twice when the mark names nodes withdrawn. The next owner expects one
// write of a resignation's or release's mark and, meeting it, writes its
// own without reading; a mark that names nodes after the next owner's,
// some of which it may not know of (the office made during this tenure,
// see Handle.learnAbove), must make it read and keep them.
func marksWritten(writes int, withdrawn bool) int {
	if withdrawn {
		return max(writes, 2)
	}
	return writes
}

// releaseMark is the group node's data a release writes: herald's mark
// naming the group's recipe, rec, and gone, the numbers after rec's node
// that the owner knows never owned (see goneAbove), as withdrawn.
// withdrawn says the mark names some: the release then writes it twice
// (see deleteMarked).
func (q *queue) releaseMark(rec *Release, gone []seqRun) (data []byte, withdrawn bool) {
	return q.releaseMarkOver(rec, nil, gone)
}

// releaseMarkOver is releaseMark written over the mark old, read just
// before: the nodes after rec's that withdrew stay on it (see
// groupMark.keepWithdrawn).
func (q *queue) releaseMarkOver(rec *Release, old []byte, gone []seqRun) (data []byte, withdrawn bool) {
	m := groupMark{Herald: 1, Recipe: q.markRecipe(), Released: rec}
	m.keepWithdrawn(old)
	if rs, ok := ParseSequence(rec.Node); ok && len(gone) > 0 {
		m.setWithdrawn(append(m.withdrawn(), runsAfter(gone, rs)...))
	}
	b, _ := json.Marshal(m)
	return b, len(m.WithdrawnRuns) > 0
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
	got, err := readNode(ctx, q.s.Conn(), q.parent, watch)
	var r groupData
	if err == nil {
		r = groupData{b: got.data, version: got.st.Version, w: got.ch}
	}
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
