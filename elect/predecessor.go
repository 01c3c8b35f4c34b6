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
	if p == "" && !h.t.goneUnseen {
		return true, nil
	}
	if info, ok := ParseName(p); p != "" && (!ok || info.Convention != "herald") {
		return true, nil
	}
	// With no owner seen before ours, but a node deleted in the group
	// between our node's create and the wait's first look (perhaps an
	// owner's, deleted by hand or with its session, its command still
	// running), only a release recorded in the transaction of the group's
	// last child change says the command ended.
	c := h.q.s.Conn()
	data, st, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return c.Get(h.q.parent) })
	if err != nil {
		return false, err
	}
	ours := func(r *Release, zxid int64) bool {
		return r != nil && (p == "" && zxid == st.Pzxid || p != "" && r.Node == p)
	}
	if ours(decodeMarkRelease(data), st.Mzxid) {
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
	return ok && ours(o.Released, ost.Mzxid), nil
}
