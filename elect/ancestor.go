package elect

import (
	"context"
	"path"

	"github.com/go-zookeeper/zk"
)

// A path found missing (a group, or a single-node leader's parent) is
// counted, for the next look that finds it again, at its nearest ancestor
// that exists: one more child there, and every level below it holding the
// one child ever made there, is the making of the whole path, once (see
// madeOnce and parentMadeOnce). Counted at the missing node's own parent
// alone, a path that never existed (a bridge started before the first
// lock of a new path, or before HDFS's failover controller made
// /hadoop-ha) had no count to read, and its first owner came with a gap
// mark.

// maxAnchorUp bounds how far above a missing node nearestThere looks.
const maxAnchorUp = 64

// statOf is p's stat, nil when p does not exist.
func statOf(ctx context.Context, conn *zk.Conn, p string) (*zk.Stat, error) {
	type res struct {
		ok bool
		st *zk.Stat
	}
	got, err := call(ctx, func() (res, error) {
		ok, st, err := conn.Exists(p)
		return res{ok, st}, err
	})
	if err != nil || !got.ok {
		return nil, err
	}
	return got.st, nil
}

// nearestThere is the stat of p or, p missing, of its nearest ancestor
// that exists, up levels above p; nil when none is within maxAnchorUp.
func nearestThere(ctx context.Context, conn *zk.Conn, p string) (st *zk.Stat, up uint8, err error) {
	for up = 0; ; up++ {
		st, err := statOf(ctx, conn, p)
		if err != nil || st != nil || p == "/" || up == maxAnchorUp {
			return st, up, err
		}
		p = path.Dir(p)
	}
}

// anchorAgain reads, for a path found again where a look found it
// missing, the stat of the ancestor that look counted at (up levels above
// p), and whether every level from p up to just below it holds the one
// child ever made there (child version 1): each made once, with nothing
// beside it. Bottom-up, so that a level made again after its own read
// shows at the ancestor.
func anchorAgain(ctx context.Context, conn *zk.Conn, p string, up uint8) (*zk.Stat, bool, error) {
	once := true
	for range up {
		st, err := statOf(ctx, conn, p)
		if err != nil {
			return nil, false, err
		}
		once = once && st != nil && st.Cversion == 1
		p = path.Dir(p)
	}
	st, err := statOf(ctx, conn, p)
	return st, once, err
}
