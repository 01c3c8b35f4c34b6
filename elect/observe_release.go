package elect

import (
	"context"
	"errors"
	"path"

	"github.com/go-zookeeper/zk"
)

// readRelease reads the release herald's mark on the group node records,
// when the mark changed since the last read and the listings alone cannot
// tell what it says. When it was written once, in the very transaction of
// the last child change, that transaction was an owner's resignation or
// release (see groupMark), and no read is needed; so too when the last
// owner is the only node that went. A mark written twice records another
// reason, and is read.
func (r *reader) readRelease(ctx context.Context, v *View) error {
	changed := r.lastMzxid != 0 && v.mzxid > r.lastMzxid
	once := v.version == r.lastVersion+1
	before := r.rel
	r.lastMzxid, r.lastVersion = v.mzxid, v.version
	r.rel = releaseBase{children: v.children, cversion: v.Cversion}
	if v.Owner != nil {
		r.rel.owner = v.Owner.Node
	}
	switch {
	case !changed:
		return nil
	case once && v.mzxid == v.Pzxid:
		v.markedOnce = true
		return nil
	case once:
		if by := before.onlyRelease(*v); by != "" {
			v.ends = &viewEnds{markedBy: by} // a fresh view's first
			return nil
		}
	}
	b, _, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return r.conn.Get(r.group) })
	switch {
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNoAuth):
		v.markUnread = true
		return nil
	case err != nil:
		return err
	}
	v.released = decodeMarkRelease(b)
	return nil
}

// readUnrecordedEnd tells why a node the last read showed went (the
// owner, or a waiter), when its deletion is the only change to the
// group's children since and nothing in the group records why: herald
// run and herald lock keep a session node (ProveSessionEnd), which tells
// it in most cases. Two reads, for such an end only (the note's data,
// which needs READ, only where herald noted the end):
//
//   - The session node is gone, and the node that held it had its last
//     child change in the very transaction of the group's (their pzxid are
//     equal): the servers delete every ephemeral node of a session that
//     ends in one transaction, while any deletion by a client deletes
//     nodes one by one. Its session ended: "session ended".
//   - The session node is there, of the node's session, and was written
//     in the very transaction of the node's deletion: herald deleted its
//     own node where neither the mark nor an office could take the
//     reason, and the session node took it (see sessionNote).
//   - The session node is there, of the node's session, and untouched
//     since before the deletion: the session lived, and every deletion
//     herald makes of its own node records its reason somewhere; so
//     someone else deleted it (by hand, a tool): "deleted".
//
// Any change since under either node, a session node written after the
// deletion, or a session node that is not of the node's session, leaves
// the end unknown, as it is for clients that keep none.
func (r *reader) readUnrecordedEnd(ctx context.Context, v *View, before releaseBase) error {
	gone := before.onlyGone(*v)
	switch {
	case gone == "":
		return nil // not one node's end alone
	case v.markedOnce || v.markedBy() == gone || v.released != nil && v.released.Node == gone,
		v.Office != nil && v.Office.Released != nil && v.Office.Released.Node == gone:
		return nil // a release says why
	case v.markUnread || v.OfficeUnreadable():
		return nil // a release may say why, unread
	}
	// A participant given another session root (SessionNodesUnder) keeps
	// its node there, which readers do not know: they find none.
	node := sessionNodeUnder(r.group, gone, DefaultSessionRoot)
	if node == "" {
		return nil
	}
	id, _, _ := heraldNode(gone)
	// The stat first: it needs no permission, where the note's data
	// needs READ, and only an end herald noted needs the data.
	there, st, err := call2(ctx, func() (bool, *zk.Stat, error) { return r.conn.Exists(node) })
	switch {
	case err != nil:
		return err
	case !there:
		there, st, err := call2(ctx, func() (bool, *zk.Stat, error) { return r.conn.Exists(path.Dir(node)) })
		if err == nil && there && st.Pzxid == v.Pzxid {
			v.setEnded(gone, ReasonSessionEnded)
		}
		return err
	case st.EphemeralOwner != id.session:
		return nil // not the owner's session's node
	case st.Mzxid < v.Pzxid && st.DataLength == 0:
		return nil // an older herald's, which noted nothing: it may have deleted its node itself
	case st.Mzxid < v.Pzxid:
		v.setEnded(gone, ReasonDeleted)
		return nil
	case st.Mzxid > v.Pzxid:
		return nil // written since: what it says now is another deletion's
	}
	b, st, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return r.conn.Get(node) })
	switch {
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNoAuth):
		return nil
	case err != nil:
		return err
	}
	if n, ok := decodeSessionNote(b, r.group, gone); ok && st.Mzxid == v.Pzxid {
		v.setEnded(gone, n.Reason)
	}
	return nil
}

// releaseBase is what the last read showed, to account for a release
// recorded since without reading it.
type releaseBase struct {
	children []string
	cversion int32
	owner    string
}

// onlyGone is the child the last read showed that v no longer holds,
// when its deletion is the only change to the group's children since
// (one cversion, one child fewer); "" otherwise.
func (b releaseBase) onlyGone(v View) string {
	if b.children == nil || v.Cversion != b.cversion+1 || len(v.children) != len(b.children)-1 {
		return ""
	}
	for _, c := range b.children {
		if !contains(v.children, c) {
			return c
		}
	}
	return ""
}

// onlyRelease names the owner whose release the group's mark must record,
// "" when the reads cannot tell: the mark is written only in the
// transaction that deletes a releasing owner's node, so when every child
// change since is explained by the two listings, the last owner is the
// only queue node gone, and its session queued again (the owner that
// resigns and campaigns again at once), the mark is its release. Without
// the last condition, someone else's write to the group node followed by
// the owner's session ending would pass for a release; a session that
// ended cannot queue again.
func (b releaseBase) onlyRelease(v View) string {
	if b.owner == "" || b.children == nil {
		return ""
	}
	seen := setDiff(b.children, v.children) + setDiff(v.children, b.children)
	if int64(v.Cversion-b.cversion) != int64(seen) {
		return ""
	}
	gone := ""
	for _, c := range b.children {
		if _, ok := ParseSequence(c); ok && !contains(v.children, c) {
			if gone != "" {
				return ""
			}
			gone = c
		}
	}
	if gone != b.owner {
		return ""
	}
	was, ok := ParseName(gone)
	if !ok || was.Session == 0 {
		return ""
	}
	for _, c := range v.children {
		if contains(b.children, c) {
			continue
		}
		if info, ok := ParseName(c); ok && info.Session == was.Session {
			return gone
		}
	}
	return ""
}

// hadOwner reports whether an earlier view had an owner.
func hadOwner(v *View) bool { return v != nil && v.Owner != nil }

// hintOf is the recipe an earlier view knew, "" for none.
func hintOf(v *View) Recipe {
	if v == nil {
		return ""
	}
	return v.Recipe
}
