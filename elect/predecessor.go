package elect

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"
)

// Predecessor is the node that owned the group before this handle's, as
// the wait that made it owner last saw it: "" when it saw none (the queue
// was empty, or its node was lowest at its first look).
func (h *Handle) Predecessor() string { return h.t.prev }

// PredecessorReleased reports whether the node that owned before ours
// went by a release herald recorded (the mark on the group node, or the
// office's record, naming that node): its owner gave the group up on
// purpose, after its work stopped. It is false for a herald node that went
// without one: someone deleted it, or its session ended. A herald runner
// whose node is deleted under it stops its command within a sixth of its
// session timeout of hearing so, which is when the next owner hears it
// too: `herald run` and `herald lock` wait that long before they start
// theirs. It is true when the predecessor was not a herald node (a foreign
// client's release records nothing, and no bound is known for its work).
//
// With no owner seen before ours, "nobody before us" must be shown, not
// assumed: an owner deleted by hand just before our node was made, or
// after it but before our first look, leaves no trace in our listing. It
// is true then only when our node is the group's first child, or the
// last node made before ours is one whose release herald recorded (see
// releasedJustBefore).
func (h *Handle) PredecessorReleased(ctx context.Context) (bool, error) {
	p := h.t.prev
	switch info, ok := ParseName(p); {
	case p != "" && (!ok || info.Convention != "herald"):
		return true, nil
	case p == "" && h.t.seq == 0:
		return true, nil // the group's first child: nothing came before it
	}
	ours := func(r *Release) bool {
		if r == nil {
			return false
		}
		if p != "" {
			return r.Node == p
		}
		return releasedJustBefore(r.Node, h.t.seq)
	}
	c := h.q.s.Conn()
	data, err := call(ctx, func() ([]byte, error) { b, _, err := c.Get(h.q.parent); return b, err })
	if err != nil {
		return false, err
	}
	if ours(decodeMarkRelease(data)) {
		return true, nil
	}
	b, ost, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return c.Get(h.q.parent + "/" + OfficeNode) })
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return false, nil
	case err != nil:
		return false, err
	}
	o, ok := decodeOffice(b, ost)
	return ok && ours(o.Released), nil
}

// releasedJustBefore reports whether the released node, whose owner's
// release herald recorded, was the last child made in the group before
// our node (sequence seq), which found nothing below it. ZooKeeper
// numbers a sequential child with the number of children created in the
// group before it (deletes do not count), so that is so when seq is one
// more than the released node's. Then nobody else can have owned between
// that release and our listing: a node that owned after it was made after
// it (every older node was gone when it owned), and before ours (a later
// one queues behind ours), and there was none. Any other node made in
// between (a waiter that gave up, a foreign client, a side node) proves
// nothing either way, and the caller waits as for an owner deleted by
// hand. A busy group loses nothing by it: its next owner queued before
// the release and saw its predecessor.
func releasedJustBefore(released string, seq int32) bool {
	rs, ok := ParseSequence(released)
	return ok && uint32(seq)-uint32(rs) == 1
}
