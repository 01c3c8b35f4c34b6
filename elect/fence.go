package elect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

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
	f := h.fenceAt(term)
	for {
		// A later term that saved a checkpoint deposes us as one that
		// wrote the office does; the checkpoint is checked unchanged in
		// the write's transaction.
		cp, err := f.readCheckpoint(ctx, h.q.s)
		switch {
		case errors.Is(err, zk.ErrNoAuth):
			cp = checkpointRead{} // not ours to read (another identity's): unchecked, as before
		case err != nil:
			return err
		}
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
		res, err := h.fenced(ctx, append(cp.check(f.Group+"/"+CheckpointNode), op)...)
		switch {
		case err == nil:
			h.office.Store(true)
			if !exists {
				// The office took a number no queue node has: learn it,
				// so that our release says nobody owned under it.
				h.lookAbove(ctx)
			}
			return nil
		case raced(res):
			continue // raced with another write of the office or the checkpoint: read again
		default:
			return err
		}
	}
}

// Checkpoint publishes progress, fenced by our ownership: the write fails
// with ErrNotLeader once we are deposed. The next owner reads it with
// ReadCheckpoint and resumes from there.
//
// A record over ZooKeeper's default jute.maxbuffer is refused with
// ErrTooBig before it is sent: the servers would close the owner's own
// connection under it, which suspends the session and so ends the
// ownership. (A Fence writes through another session, and tries; through
// the owner's own it refuses so too.)
func (h *Handle) Checkpoint(ctx context.Context, data []byte) error {
	term, err := h.heldTerm(ctx)
	if err != nil {
		return err
	}
	return h.fenceAt(term).checkpoint(ctx, h.q.s, data, true)
}

// tooBigForOwner is ErrTooBig when the request writing rec is over
// ZooKeeper's default jute.maxbuffer: sent through the owner's own
// session, the servers would close its connection and so end ownership.
func (f Fence) tooBigForOwner(rec []byte) error {
	if n := requestSize(f, rec); n > defaultMaxBuffer-4<<10 {
		return fmt.Errorf("%w: checkpoint of %s: its request (%d bytes) is over ZooKeeper's default jute.maxbuffer (%d bytes), and sent through the owner's own session it would cost the connection and the ownership; it was not saved: save a smaller checkpoint, or, on servers whose jute.maxbuffer was raised, write it with Fence.Checkpoint through another session", ErrTooBig, f.Group, n, defaultMaxBuffer)
	}
	return nil
}

// defaultMaxBuffer is ZooKeeper's default jute.maxbuffer, the largest
// request a server takes unless set.
const defaultMaxBuffer = 0xfffff

// requestSize is the size of the record f writes, rec, and of the paths
// its multi names: the owner's node, the checkpoint and the office, each
// the group's path and more, so under a long group path they weigh as
// much as the record.
func requestSize(f Fence, rec []byte) int {
	return len(rec) + len(f.Group+"/"+f.Node) + len(f.Group+"/"+CheckpointNode) + len(f.Group+"/"+OfficeNode)
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

// Validate says what is wrong with a fence taken from the environment,
// and what a valid one is: each part is the owner's, as its
// Handle.Fence gives them, never made up (herald run hands them to its
// command as HERALD_ELECTION, HERALD_NODE and HERALD_TERM).
func (f Fence) Validate() error {
	if err := ValidatePath(f.Group); err != nil {
		return fmt.Errorf("fence group: %w (the owner's group, as its Handle.Fence gives it)", err)
	}
	if _, ok := ParseSequence(f.Node); !ok || strings.Contains(f.Node, "/") {
		return fmt.Errorf("elect: fence node %q is not a queue node name: it is the name of the owner's node in the group, without the group's path and ending in its 10-digit sequence, such as x-0000000007, as the owner's Handle.Fence gives it", f.Node)
	}
	if f.Term <= 0 {
		// A handle that ended before its term was known gives 0 (Term):
		// no owner writes with it.
		return fmt.Errorf("%w: fence term %d is not an owner's term: it is the czxid of the owner's node, > 0, as the owner's Handle.Fence gives it once its term is known", ErrNotLeader, f.Term)
	}
	return nil
}

// Checkpoint writes data as the group's checkpoint, fenced twice: the
// write is a multi that first checks f's node still exists, and it is
// version-checked against the checkpoint f read, which must carry no later
// term than f's. So once a newer owner has written, an older one never
// can, even if its node still exists.
func (f Fence) Checkpoint(ctx context.Context, s *Session, data []byte) error {
	return f.checkpoint(ctx, s, data, s != nil && f.ownersSession(s))
}

// checkpoint is Checkpoint; owners says s is the owner's own session
// (Handle.Checkpoint's is, whatever its node's name tells), which a
// record over the servers' limit would cost its connection.
func (f Fence) checkpoint(ctx context.Context, s *Session, data []byte, owners bool) error {
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
	if owners {
		if err := f.tooBigForOwner(rec); err != nil {
			return err // the owner's session is at stake
		}
	}
	return f.save(ctx, s, rec)
}

// save writes rec, a checkpoint's record, through s, and tries again
// while the connection fails or another write races with ours; each read
// after a write of ours went unanswered tells whether it landed.
func (f Fence) save(ctx context.Context, s *Session, rec []byte) error {
	var sent bool      // a write went without its answer (a connection lost)
	var cut error      // the last connection loss, should the tries run out
	var lost lostSends // sends cut off once sent, none shown to have landed
	big := len(rec) > bigRecord
	for tries := 0; tries < 8; tries++ {
		cur, office, err := f.readBoth(ctx, s, sent)
		probe := err == nil && lost.readBack(cur) && big
		switch {
		case sent && cur.exists && bytes.Equal(cur.data, rec):
			// Our write landed; only its answer was lost. So even when
			// the office then read says a later term took office
			// (err): nothing replaced the checkpoint, which was saved.
			return nil
		case err == nil && !probe && lost.n >= 2 && big:
			return f.tooBig(len(rec))
		case connLoss(err) && ctx.Err() == nil:
			cut, lost = err, lostSends{} // the connection itself fails, not the write
			if err := f.reconnect(ctx, s, sent); err != nil {
				return err
			}
			continue
		case err != nil:
			return f.sessionErr(s, err, sent)
		}
		if probe {
			if err := f.probeSize(ctx, s, rec, cur, &lost); err != nil {
				return err
			}
			continue
		}
		res, err := f.write(ctx, s, rec, cur, office)
		switch {
		case err == nil:
			return nil
		case connLoss(err) && ctx.Err() == nil:
			// Read again after reconnecting: a lost reply may hide our
			// own write, which the next read shows, byte for byte.
			sent, cut = sent || writeSent(err), err
			if writeSent(err) {
				lost.cut(cur, false)
			}
			if err := f.reconnect(ctx, s, sent); err != nil {
				return err
			}
		case raced(res):
			// Another write came between our read and ours: read again.
		default:
			// Cut off by ctx while the write was on its way, it may
			// have been applied all the same.
			return f.sessionErr(s, err, sent || writeSent(err) && (ctx.Err() != nil || connLoss(err)))
		}
	}
	if cut != nil {
		return fmt.Errorf("elect: checkpoint of %s: the connection to ZooKeeper kept being lost (%w)%s", f.Group, cut, maySaved(sent))
	}
	return fmt.Errorf("elect: checkpoint of %s kept racing with other writes", f.Group)
}

// write makes one fenced write of rec over the checkpoint as read, cur,
// with the office checked unchanged since it was read.
func (f Fence) write(ctx context.Context, s *Session, rec []byte, cur, office checkpointRead) ([]zk.MultiResponse, error) {
	p := f.Group + "/" + CheckpointNode
	var op any
	if cur.exists {
		op = &zk.SetDataRequest{Path: p, Data: rec, Version: cur.version}
	} else {
		op = &zk.CreateRequest{Path: p, Data: rec, Acl: checkpointACL(ctx, s, f.Group)}
	}
	return f.multi(ctx, s, append(office.check(f.Group+"/"+OfficeNode), op)...)
}

// lostSends counts a record's sends cut off with the connection while
// no read back showed any of them landed: two, for a big record, are
// taken for the servers refusing it as too big (ErrTooBig).
type lostSends struct {
	n     int
	at    checkpointRead // the checkpoint as read before the last of them
	probe bool           // the last of them was a probe (probeSize), which cannot land
}

func (l *lostSends) cut(at checkpointRead, probe bool) {
	l.n, l.at, l.probe = l.n+1, at, probe
}

// readBack takes the checkpoint as read after the last send was cut off.
// A write landed since (ours, or one that replaced it) starts the count
// again: the servers took it. With no checkpoint before or after, only
// the group's pzxid moved: a write of ours may have made the node,
// deleted by hand since, or a queue node came or went, as candidates and
// waiters do all the time. That alone does not start the count again
// (it never reached two in a group whose queue moves); probe says to
// send a probe first, which tells whether the servers take a request
// of the record's size.
func (l *lostSends) readBack(cur checkpointRead) (probe bool) {
	switch {
	case cur.same(l.at):
		return false
	case cur.exists || l.at.exists:
		l.n = 0
		return false
	}
	return l.n > 0 && !l.probe // a probe's cut-off already told
}

// probeSize sends rec as a write that cannot land, a SetData of the
// checkpoint at a version no node reaches (ZooKeeper's counter would
// have to wrap), smaller than the write's multi. Answered, the servers
// take a request that size, and the lost writes were the network's (or
// one landed and was deleted): the count starts again. Cut off, they
// refuse it, and so refused the larger writes: one more lost send.
func (f Fence) probeSize(ctx context.Context, s *Session, rec []byte, cur checkpointRead, lost *lostSends) error {
	_, err := call(ctx, func() (*zk.Stat, error) {
		return s.Conn().Set(f.Group+"/"+CheckpointNode, rec, math.MinInt32)
	})
	switch {
	case connLoss(err) && ctx.Err() == nil:
		lost.cut(cur, true)
		return f.reconnect(ctx, s, true)
	case err == nil, errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoAuth):
		*lost = lostSends{} // answered
		return nil
	}
	return f.sessionErr(s, err, true) // a write of ours went unanswered before the probe
}

// bigRecord is the size above which a record whose every write costs the
// connection, while reads on the same session go through, is taken for
// one the servers refuse as too big: ZooKeeper closes the connection of a
// request over its jute.maxbuffer (1 MB unless set), without an answer,
// and the write would otherwise be retried as if the network had failed,
// its caller told to try again.
const bigRecord = 64 << 10

// tooBig is ErrTooBig for a record of n bytes.
func (f Fence) tooBig(n int) error {
	return fmt.Errorf("%w: checkpoint of %s: the servers closed the connection each time its write (a %d-byte record) was sent, while reads went through, and it was not saved: ZooKeeper does so with a request over its jute.maxbuffer (1 MB unless set; the server's log says \"Len error\"): save a smaller checkpoint, or raise jute.maxbuffer on every server", ErrTooBig, f.Group, n)
}

// readBoth reads the checkpoint and the office for a fenced checkpoint
// (an office this identity may not read is left unchecked). Once a write
// of ours went unanswered (sent), the session's server first catches up
// with the leader (a sync, answered after the proposals before it): the
// session may have moved to a member whose copy lacks that write, still a
// proposal or not yet applied there, and a read there alone took a write
// that landed for one that did not (ErrTooBig's "it was not saved"). A
// checkpoint not there carries the group's pzxid (see childChange). cur
// stays as read when the office's read then fails: our own record found
// there tells a write that landed, whatever the office says since.
func (f Fence) readBoth(ctx context.Context, s *Session, sent bool) (cur, office checkpointRead, err error) {
	if sent {
		if _, err = call(ctx, func() (string, error) { return s.Conn().Sync(f.Group) }); err != nil {
			return cur, office, err
		}
	}
	if cur, err = f.readCheckpoint(ctx, s); err != nil {
		return cur, office, err
	}
	if !cur.exists {
		if cur.mzxid, err = f.childChange(ctx, s); err != nil {
			return cur, office, err
		}
	}
	office, err = f.readOffice(ctx, s)
	if errors.Is(err, zk.ErrNoAuth) {
		return cur, checkpointRead{}, nil
	}
	return cur, office, err
}

// childChange is the zxid of the last child made or deleted in f's group
// (its pzxid), which tells one absence of the checkpoint from another: a
// write of ours that made it, deleted since (by hand), changed it.
func (f Fence) childChange(ctx context.Context, s *Session) (int64, error) {
	_, st, err := call2(ctx, func() (bool, *zk.Stat, error) { return s.Conn().Exists(f.Group) })
	if err != nil || st == nil {
		return 0, err
	}
	return st.Pzxid, nil
}

// reconnect waits for the session to connect again after a connection
// was lost, sent saying whether a write of ours may have landed.
func (f Fence) reconnect(ctx context.Context, s *Session, sent bool) error {
	if err := s.awaitConnected(ctx); err != nil {
		return f.sessionErr(s, fmt.Errorf("the connection to ZooKeeper was lost: %w", err), sent)
	}
	return nil
}

// sessionErr is err, from a fenced write through s, with what it means:
// s's session ending deposes the owner only when s is the owner's own
// session (its node goes with it); a helper's (herald checkpoint put's)
// says nothing of the owner, and is ErrSessionLost; sent says whether a
// write of ours went unanswered, so it may have been saved.
func (f Fence) sessionErr(s *Session, err error, sent bool) error {
	switch {
	case errors.Is(err, ErrNotLeader) && sent:
		// Deposed after a write of ours went unanswered: it may have
		// landed before the newer term's, which replaced it.
		return fmt.Errorf("%w; a write of it went unanswered before, so it may have been saved and then replaced by the newer term's", err)
	case errors.Is(err, ErrNotLeader):
		return err
	case expired(err) && !f.ownersSession(s):
		return fmt.Errorf("elect: checkpoint of %s: %w: this writer's own session (not the leader's) ended%s", f.Group, ErrSessionLost, maySaved(sent))
	case expired(err):
		// The owner's own session ended (a sync or a reconnect answered
		// so): its node went with it, and it no longer owns.
		return fmt.Errorf("%w: checkpoint of %s: the owner's own session ended, so %s is gone (%v)%s", ErrNotLeader, f.Group, f.Node, err, maySaved(sent))
	case connLoss(err) || errors.Is(err, ErrSessionLost) || errors.Is(err, ErrSessionClosed) || ctxEnded(err):
		return fmt.Errorf("elect: checkpoint of %s: %w%s", f.Group, err, maySaved(sent))
	}
	return err
}

// ctxEnded reports whether err is a context's end.
func ctxEnded(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// maySaved says, when a write went unanswered, that it may have landed.
func maySaved(sent bool) string {
	if sent {
		return "; a write of it went unanswered, so it may or may not have been saved: read it back (herald checkpoint get) before relying on either"
	}
	return "; it was not saved"
}

// ownersSession reports whether s is the session that made the fence's
// node: its end deposes the owner.
func (f Fence) ownersSession(s *Session) bool {
	id, _, ok := heraldNode(f.Node)
	return ok && id.session == s.ID()
}

// checkpointRead is a record node (the checkpoint, the office) as a
// fenced writer last saw it.
type checkpointRead struct {
	exists  bool
	version int32
	mzxid   int64 // the zxid of the write that left it so (with no node, the group's pzxid)
	data    []byte
}

// same reports whether r and o are the same write of the record node (or
// both found none). The version alone cannot tell: a node deleted and
// made again (by hand, "to start afresh") starts at version 0 again,
// and a write of ours that landed in between passed for one that did not;
// so did one that made it, deleted since, with no node either side.
func (r checkpointRead) same(o checkpointRead) bool {
	return r.exists == o.exists && r.mzxid == o.mzxid
}

// check is the check, for the write's transaction, that the record node
// at p is as read: unchanged since (none when it was not there: a record
// written meanwhile by a later term is left to that term's next write,
// which reads ours and replaces it).
func (r checkpointRead) check(p string) []any {
	if !r.exists {
		return nil
	}
	return []any{&zk.CheckVersionRequest{Path: p, Version: r.version}}
}

// raced reports whether a fenced write's transaction failed on a record
// node that changed after it was read (the first op checks the owner's
// node, whose failure is no race).
func raced(res []zk.MultiResponse) bool {
	for i := 1; i < len(res); i++ {
		if failedAt(res, i, zk.ErrNoNode) || failedAt(res, i, zk.ErrNodeExists) || failedAt(res, i, zk.ErrBadVersion) {
			return true
		}
	}
	return false
}

// readOffice reads the group's office and refuses when a term later than
// f's wrote it (its acknowledgment or its release): that owner has taken
// office after ours, whether or not it saved a checkpoint yet, and
// whatever became of the checkpoint since (deleted or overwritten by
// hand). (Checkpoint refuses a group that may hold no office, a lock's,
// before it reads.)
func (f Fence) readOffice(ctx context.Context, s *Session) (checkpointRead, error) {
	return f.readRecord(ctx, s, OfficeNode, "office", func(b []byte, st *zk.Stat) (int64, string) {
		o, _ := decodeOffice(b, st)
		return o.laterTerm(f.Term)
	})
}

// readCheckpoint reads the group's checkpoint and refuses when a term
// later than f's wrote it.
func (f Fence) readCheckpoint(ctx context.Context, s *Session) (checkpointRead, error) {
	return f.readRecord(ctx, s, CheckpointNode, "checkpoint", func(b []byte, st *zk.Stat) (int64, string) {
		if c, err := decodeCheckpoint(b, st); err == nil && c.Term > f.Term {
			return c.Term, c.Node
		}
		return 0, ""
	})
}

// readRecord reads the record node name (what it is, for errors) of f's
// group, and refuses when later, given its data and stat, names a term
// later than f's and its writer, unless that record is not this group's
// (see foreign).
func (f Fence) readRecord(ctx context.Context, s *Session, name, what string, later func([]byte, *zk.Stat) (int64, string)) (checkpointRead, error) {
	b, st, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return s.Conn().Get(f.Group + "/" + name) })
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return checkpointRead{}, nil
	case err != nil && expired(err) && f.ownersSession(s):
		return checkpointRead{}, fmt.Errorf("%w: session expired: %v", ErrNotLeader, err)
	case err != nil:
		return checkpointRead{}, err
	}
	if term, writer := later(b, st); term != 0 && !f.foreign(ctx, s, writer) {
		return checkpointRead{}, fmt.Errorf("%w: term %d of %s already wrote the %s, so %s (term %d) is deposed", ErrNotLeader, term, f.Group, what, f.Node, f.Term)
	}
	return checkpointRead{exists: true, version: st.Version, mzxid: st.Mzxid, data: b}, nil
}

// hasSequence reports whether name ends in a ZooKeeper sequence, as every
// queue node's does.
func hasSequence(name string) bool {
	_, ok := ParseSequence(name)
	return ok
}

// queueNodeName reports whether name can be a queue node of a group, as
// the writer a record names: one child's name, which ZooKeeper allows,
// ending in a sequence. A record written by hand may name anything (none,
// a path, herald's checkpoint node); looked up under the group, such a
// name failed as an invalid path, or found a side node, and either way
// passed for a later owner still in the group.
func queueNodeName(name string) bool {
	return hasSequence(name) && !strings.Contains(name, "/") && ValidatePath("/"+name) == nil
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
	if !queueNodeName(writer) {
		return true // no node of any group: written by hand
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
func (f Fence) multi(ctx context.Context, s *Session, ops ...any) ([]zk.MultiResponse, error) {
	node := f.Group + "/" + f.Node
	st, err := call(ctx, func() (*zk.Stat, error) {
		ok, st, err := s.Conn().Exists(node)
		if err == nil && !ok {
			return nil, zk.ErrNoNode
		}
		return st, err
	})
	if errors.Is(err, zk.ErrNoNode) || err == nil && st.Czxid != f.Term {
		return nil, beforeSend{fmt.Errorf("%w: %s is gone, so %s belongs to someone else now", ErrNotLeader, node, f.Group)}
	}
	if err != nil {
		return nil, beforeSend{err}
	}
	if err := f.owns(ctx, s); err != nil {
		return nil, beforeSend{err}
	}
	res, err := multi(ctx, s.Conn(), append([]any{&zk.CheckVersionRequest{Path: node, Version: -1}}, ops...)...)
	if err != nil && failedAt(res, 0, zk.ErrNoNode) {
		return res, fmt.Errorf("%w: %s is gone, so %s belongs to someone else now", ErrNotLeader, node, f.Group)
	}
	if err != nil && len(res) == 0 && expired(err) && f.ownersSession(s) {
		return res, fmt.Errorf("%w: session expired: %v", ErrNotLeader, err)
	}
	return res, err
}

// beforeSend is an error of Fence.multi's checks, made before its write
// was sent: nothing of that write can have landed.
type beforeSend struct{ error }

func (e beforeSend) Unwrap() error { return e.error }

// writeSent reports whether err, from Fence.multi, came once its write
// was sent.
func writeSent(err error) bool {
	var pre beforeSend
	return !errors.As(err, &pre)
}

// fenced runs op in a multi after a check that our node still exists.
func (h *Handle) fenced(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	res, err := multi(ctx, h.q.s.Conn(), append([]any{&zk.CheckVersionRequest{Path: h.NodePath(), Version: -1}}, ops...)...)
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
	case !queueNodeName(c.Node):
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
