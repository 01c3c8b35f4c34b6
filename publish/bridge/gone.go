package bridge

import (
	"context"
	"errors"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// A group found missing after a stretch the bridge did not see (its
// connection lost, a new session, the group unreadable, a takeover) is
// known missing as of its parent's last child change, as at start-up
// (adoptReported): its end is published dated so, and marked as a gap, in
// the form the owners stores take (a snapshot of no owner supersedes an
// owner created no later than its zxid). Read without that date (zxid 0),
// the stores would keep naming the gone owner, which the bridge's
// heartbeats then confirm.

// goneReadWait bounds the reads that date a group found missing.
const goneReadWait = 10 * time.Second

// goneAsOf reports whether group is gone from ZooKeeper (for a single-node
// leader, its parent: a missing leader node in an existing parent is a
// leader's end seen as such), and if so the zxid as of which that is
// known: the last child change of its nearest ancestor that exists.
func (b *Bridge) goneAsOf(ctx context.Context, group string) (zxid int64, gone bool, err error) {
	_, s := b.sessionState()
	if s == nil {
		return 0, false, elect.ErrSessionLost
	}
	ctx, cancel := context.WithTimeout(ctx, goneReadWait)
	defer cancel()
	p := group
	if _, single := b.leaderNode(group); single {
		p = path.Dir(group)
	}
	for first := true; ; first = false {
		st, err := statOf(ctx, s.Conn(), p)
		switch {
		case err != nil:
			return 0, false, err
		case st != nil && first:
			return 0, false, nil
		case st != nil:
			return st.Pzxid, true, nil
		case p == "/":
			return 0, false, errors.New("the root node is missing")
		}
		p = path.Dir(p)
	}
}

// statOf is the stat of p, nil when it does not exist.
func statOf(ctx context.Context, c *zk.Conn, p string) (*zk.Stat, error) {
	type res struct {
		ok  bool
		st  *zk.Stat
		err error
	}
	out := make(chan res, 1)
	go func() {
		ok, st, err := c.Exists(p)
		out <- res{ok, st, err}
	}()
	select {
	case r := <-out:
		if r.err != nil || !r.ok {
			return nil, r.err
		}
		return r.st, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// dateGone makes c, a snapshot of no owner, the end of the owner the
// bridge last published (or saw) when it finds the group gone: dated as of its parent's last child
// change when the read could not date it, and marked as a gap (the
// owner's end, and whatever came between, went unseen). A snapshot marked
// as a gap already (a group read afresh at a takeover) is dated too.
// Other snapshots of a missing group stay at zxid 0, the same for every
// bridge.
func (b *Bridge) dateGone(ctx context.Context, c *elect.Change) {
	if c.Kind != elect.Snapshot || c.Owner != nil {
		return
	}
	b.viewMu.Lock()
	saw := b.reported[c.Group].owned // the last word of it names an owner
	b.viewMu.Unlock()
	saw = saw || b.truthOwner(c.Group) != ""
	if !saw && (!c.Gap || c.Zxid != 0) {
		return
	}
	zxid, gone, err := b.goneAsOf(ctx, c.Group)
	if err != nil {
		b.log.Warn("cannot tell whether a group found without an owner is gone; its end is published undated, which the owners stores may not take", "group", c.Group, "err", err)
		return
	}
	if !gone {
		return
	}
	if c.Zxid == 0 {
		c.Zxid = zxid
	}
	if !c.Gap {
		b.log.Info("a group is gone, found so after a stretch this bridge did not see; publishing its owner's end, marked as a gap", "group", c.Group, "zxid", c.Zxid)
	}
	c.Gap = true
}

// endUnobserved publishes the end of each group whose held events were
// dropped at a takeover and that is no longer observed (deleted while this
// bridge stood by): the events it dropped may be the only word of that
// end, and no observer is left to read the group afresh. A group that
// exists again is left to its root's listing.
func (b *Bridge) endUnobserved(ctx context.Context, groups map[string]droppedState) {
	for g, d := range groups {
		zxid, gone, err := b.goneAsOf(ctx, g)
		if err != nil {
			b.log.Warn("cannot tell whether a group no longer observed, some of whose changes may be unpublished, is gone; its end is not published", "group", g, "err", err)
			continue
		}
		if !gone {
			continue
		}
		b.log.Warn("a group some of whose changes may be unpublished is gone and no longer observed; publishing its end, marked as a gap", "group", g, "zxid", zxid)
		c := elect.Change{Kind: elect.Snapshot, Group: g, Recipe: d.recipe, Zxid: zxid, Gap: true}
		events := publish.Translate(c, b.cfg.Source, time.Now())
		b.live.record(events)
		if _, err := b.deliver(ctx, events); err != nil && ctx.Err() == nil && !errors.Is(err, publish.ErrClosed) {
			b.log.Error("could not publish the end of a gone group", "group", g, "err", err)
		}
		b.pipe.Forget(g) // not observed: nothing of it to keep
	}
}

// noteReported keeps whether a group's last word names an owner
// (reportedGroup.owned: adoptReported looks for such groups in each new
// session) up to date with what c says: a group whose end this bridge
// published is not looked for again, one it published an owner of is.
func (b *Bridge) noteReported(c elect.Change) {
	if c.Kind != elect.Snapshot && c.Kind != elect.OwnerChanged {
		return
	}
	b.viewMu.Lock()
	defer b.viewMu.Unlock()
	r, ok := b.reported[c.Group]
	if c.Owner == nil {
		if ok && r.owned {
			r.owned = false
			b.reported[c.Group] = r
		}
		return
	}
	if b.reported == nil {
		b.reported = map[string]reportedGroup{}
	}
	r.owned = true
	b.reported[c.Group] = r
}

// reportedGroup is what the stores say of a group: high is the highest
// zxid they hold of it (as read at start) or this bridge published since,
// below which a snapshot comes from another ensemble (ensemble.go); owned,
// that the newest report names an owner.
type reportedGroup struct {
	high  int64
	owned bool
}
