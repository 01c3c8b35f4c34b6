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
// theirs. It is true when there was no predecessor, or it was not a
// herald node (a foreign client's release records nothing, and no bound
// is known for its work).
func (h *Handle) PredecessorReleased(ctx context.Context) (bool, error) {
	p := h.t.prev
	if p == "" && h.t.goneUnseen {
		return h.lastChangeReleased(ctx)
	}
	if info, ok := ParseName(p); p == "" || !ok || info.Convention != "herald" {
		return true, nil
	}
	c := h.q.s.Conn()
	data, _, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return c.Get(h.q.parent) })
	if err != nil {
		return false, err
	}
	if r := decodeMarkRelease(data); r != nil && r.Node == p {
		return true, nil
	}
	o, ok, err := ReadOffice(ctx, h.q.s, h.q.parent)
	return err == nil && ok && o.Released != nil && o.Released.Node == p, err
}

// lastChangeReleased is PredecessorReleased when the wait saw no owner
// before ours, but a node was deleted in the group between our node's
// create and the wait's first look: perhaps an owner's, deleted by hand or
// with its session, its command still running. It is true only when the
// group's last child change was a release herald recorded in the same
// transaction (the mark on the group node, or the office's record).
func (h *Handle) lastChangeReleased(ctx context.Context) (bool, error) {
	c := h.q.s.Conn()
	data, st, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return c.Get(h.q.parent) })
	if err != nil {
		return false, err
	}
	if st.Mzxid == st.Pzxid && decodeMarkRelease(data) != nil {
		return true, nil
	}
	b, ost, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return c.Get(h.q.parent + "/" + OfficeNode) })
	if errors.Is(err, zk.ErrNoNode) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	o, ok := decodeOffice(b, ost)
	return ok && o.Released != nil && ost.Mzxid == st.Pzxid, nil
}
