package bridge

import (
	"context"
	"time"

	"github.com/zkherald/herald/elect"
)

// A ZooKeeper ensemble rebuilt empty under the same address, or another
// ensemble the bridge is pointed at, numbers its transactions from the
// start again: its zxids, and the terms (czxids) of its owners, are below
// the ones the bridge's stores hold, and the stores, ordering by them,
// would take the new ensemble's state for older than the gone one's and
// keep naming a gone owner as current.
//
// The rule: each session's server is first synced with its leader (a
// sync), so that what the session reads is at least as new as anything
// the ensemble committed before. A group's snapshot whose zxid is then
// below the highest zxid its stores hold of it (or this bridge published
// since) cannot come from the ensemble those came from, whose zxids only
// grow: it comes from a new ensemble. A server that merely lags behind
// its leader (a new session on a follower) is caught up by the sync and
// does not look so. Its snapshot is published marked as a gap and as
// taken from a new ensemble (publish.Event.NewEnsemble), which the stores
// and readers take for the group's state whatever they held before.
//
// A new ensemble whose zxids happen to exceed the old one's (its epoch,
// the high 32 bits, already higher, as after many leader elections) looks
// like the same ensemble moving on and is not told apart this way. A
// session whose sync fails tells nothing either: a lower zxid is then
// logged, and the snapshot ordered as before.

// syncWait bounds a session's sync with its leader.
const syncWait = 10 * time.Second

// syncLeader syncs s's server with its leader, and records s as synced
// when that succeeded.
func (b *Bridge) syncLeader(ctx context.Context, s *elect.Session) {
	ctx, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.Conn().Sync("/")
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	b.viewMu.Lock()
	defer b.viewMu.Unlock()
	if err != nil {
		b.synced = nil
		b.log.Warn("could not sync the ZooKeeper server with its leader; this session cannot tell a replaced ensemble from a server that lags", "err", err)
		return
	}
	b.synced = s
}

// replacedEnsemble reports whether c, a snapshot, comes from another
// ensemble than the group's earlier reports: its zxid is below the
// highest of them, read on a synced session.
func (b *Bridge) replacedEnsemble(c elect.Change) bool {
	if c.Kind != elect.Snapshot || c.Zxid <= 0 {
		return false
	}
	_, s := b.sessionState()
	b.viewMu.Lock()
	high, synced := b.reported[c.Group].high, s != nil && b.synced == s
	b.viewMu.Unlock()
	switch {
	case c.Zxid >= high:
		return false
	case !synced:
		b.log.Warn("a group reads older than its last report, on a session not synced with its leader: taken for a server that lags", "group", c.Group, "zxid", c.Zxid, "reported", high)
		return false
	}
	b.log.Warn("a group reads older than its last report although the server is synced with its leader: the ZooKeeper ensemble is not the one reported from before (rebuilt or replaced); publishing its state afresh, marked as a gap",
		"group", c.Group, "zxid", c.Zxid, "epoch", c.Zxid>>32, "reported", high, "reported_epoch", high>>32)
	return true
}

// noteZxid keeps the group's highest zxid (reportedGroup.high) up to
// date with c, published: a new ensemble's snapshot starts its group's
// again.
func (b *Bridge) noteZxid(c elect.Change, replaced bool) {
	b.viewMu.Lock()
	defer b.viewMu.Unlock()
	if b.reported == nil {
		b.reported = map[string]reportedGroup{}
	}
	r := b.reported[c.Group]
	if replaced {
		r.high = c.Zxid
	} else {
		r.high = max(r.high, c.Zxid)
	}
	b.reported[c.Group] = r
}
