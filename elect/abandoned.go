package elect

import (
	"context"
	"encoding/json"
	"errors"
	"path"

	"github.com/go-zookeeper/zk"
)

// ReleaseAbandoned deletes, from another session, the queue node at
// nodePath, whose owner's process died while it owned, and records rec on
// the group node as its release, as the owner's own release would have.
// Call it only once nothing of the owner's work can still run: herald run
// and herald lock's watchdog call it once the dead runner's command and
// what it started are gone. The next herald owner then starts at once,
// where it would wait for the dead owner's session to expire, and then
// for as long as a runner that cannot hear takes to stop its command (see
// PredecessorReleased).
//
// rec is written twice in the transaction that deletes the node, as a
// release for any reason but a resignation is, so that observers read it;
// recipe is written into herald's mark unless the mark already names one.
// Where herald may not write the group node (someone else's data, its
// ACL), an election's office takes the record, as it takes a release
// there (see deleteRecorded); a group that may hold no office (a lock's)
// gets none, and the node is deleted alone. It reports whether it deleted
// the node: false, with a nil error, when the node was already gone.
func ReleaseAbandoned(ctx context.Context, s *Session, nodePath string, rec Release, recipe Recipe) (bool, error) {
	group := path.Dir(nodePath)
	c := s.Conn()
	for tries := 0; tries < 4; tries++ {
		b, st, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return c.Get(group) })
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return false, nil // the node went with its group
		case errors.Is(err, zk.ErrNoAuth) || err == nil && !markable(b):
			return abandonedInOffice(ctx, s, nodePath, rec)
		case err != nil:
			return false, err
		}
		if r, ok := recipeOf(b); ok {
			recipe = r
		}
		m := groupMark{Herald: 1, Recipe: recipe, Released: &rec}
		m.keepWithdrawn(b)
		data, _ := json.Marshal(m)
		ops := append([]any{&zk.DeleteRequest{Path: nodePath, Version: -1}}, markWrites(group, data, st.Version, 2)...)
		res, err := multi(ctx, c, ops...)
		switch {
		case err == nil:
			return true, nil
		case failedAt(res, 0, zk.ErrNoNode):
			return false, nil
		case failedAt(res, 1, zk.ErrBadVersion):
			continue // someone wrote the group node: read it again
		case errors.Is(err, zk.ErrNoAuth) || failedAt(res, 1, zk.ErrNoAuth):
			return abandonedInOffice(ctx, s, nodePath, rec)
		}
		return false, err
	}
	return deleteAlone(ctx, c, nodePath, rec)
}

// abandonedInOffice is ReleaseAbandoned where herald may not write the
// group node: the node is deleted with rec in its election's office (the
// office created when missing), or alone where the group may hold no
// office or herald may not write it. The record replaces the office's
// content without reading it first: the dead node owned, so any ack
// there is its own or a predecessor's.
func abandonedInOffice(ctx context.Context, s *Session, nodePath string, rec Release) (bool, error) {
	group, c := path.Dir(nodePath), s.Conn()
	if sideNodesRefused(group, path.Base(nodePath)) != nil {
		return deleteAlone(ctx, c, nodePath, rec)
	}
	office := group + "/" + OfficeNode
	data, _ := json.Marshal(Office{Herald: 1, Released: &rec})
	for tries := 0; tries < 4; tries++ {
		there, _, err := call2(ctx, func() (bool, *zk.Stat, error) { return c.Exists(office) })
		if err != nil {
			return false, err
		}
		var write any = &zk.SetDataRequest{Path: office, Data: data, Version: -1}
		if !there {
			write = &zk.CreateRequest{Path: office, Data: data, Acl: sideACL(ctx, s, group, s.DefaultACL(), s.acl != nil)}
		}
		res, err := multi(ctx, c, &zk.DeleteRequest{Path: nodePath, Version: -1}, write)
		switch {
		case err == nil:
			return true, nil
		case failedAt(res, 0, zk.ErrNoNode):
			return false, nil
		case failedAt(res, 1, zk.ErrNoNode), failedAt(res, 1, zk.ErrNodeExists):
			continue // the office came or went meanwhile
		case failedAt(res, 1, zk.ErrNoAuth), failedAt(res, 1, zk.ErrNoChildrenForEphemerals):
			return deleteAlone(ctx, c, nodePath, rec)
		}
		return false, err
	}
	return deleteAlone(ctx, c, nodePath, rec)
}

// deleteAlone deletes the node at p where neither the group's mark nor
// an office may take why it goes: the dead runner's session node (under
// the default root, where observers look) takes it instead, where it is
// there (see deleteNoted).
func deleteAlone(ctx context.Context, c *zk.Conn, p string, rec Release) (bool, error) {
	_, err := deleteNoted(ctx, c, p, sessionNodeUnder(path.Dir(p), path.Base(p), DefaultSessionRoot), rec.Reason, rec.Vouches, 0, false)
	if errors.Is(err, zk.ErrNoNode) {
		return false, nil
	}
	return err == nil, err
}
