package bridge

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// discover keeps gs in step with what segs find below root ("*" for every
// child, else a fixed name), with one children watch per level: a --discover
// root is segs ["*"] (every child a group). A level below a "*" is
// discovered by a discoverer of its own, started as its child appears and
// stopped as it goes. A missing root is waited for with an exists watch;
// while a root given is missing the bridge is not ready (rootMissing).
func (b *Bridge) discover(ctx context.Context, s *elect.Session, root string, segs []string, gs *groupSet, w *listWatch) {
	defer b.dropListWatch(w)
	// The first listing of a root in a session tells which of its groups
	// went while the bridge had no session (forgetGone). A root given
	// (--discover, or a pattern such as a --preset's /hadoop-ha) that is
	// missing makes the bridge not ready; a level below it may come and go.
	first := slices.ContainsFunc(b.discoverRoots(), func(p Pattern) bool { return p.Root == root && slices.Equal(p.Segs, segs) })
	top := first
	for len(segs) > 0 && segs[0] != "*" { // fixed names lead straight on
		root, segs = childOf(root, segs[0]), segs[1:]
	}
	if len(segs) == 0 {
		gs.add(root, root)
		b.waitOn(w, "", nil, time.Now(), -1)
		<-ctx.Done()
		gs.remove(root, root)
		return
	}
	lv := &level{root: root, rest: segs[1:], warned: map[string]bool{}, sub: map[string]context.CancelFunc{}, queue: map[string]bool{}, lw: w}
	defer lv.stop()
	bo := b.backoff(200*time.Millisecond, b.cfg.MaxRetryWait)
	defer func() {
		b.forgetListError(root) // a level gone, or the term over: nobody waits on it
		b.setSkipped(root, nil, gs, nil)
		for g := range gs.owned(root) {
			gs.remove(g, root)
		}
	}()
	for ctx.Err() == nil {
		if !awaitConnected(ctx, s) {
			untilTermEnds(ctx)
			return
		}
		missing, sent := false, time.Now()
		children, st, watch, err := childrenW(ctx, s.Conn(), root)
		if errors.Is(err, zk.ErrNoNode) {
			var again bool
			if watch, missing, again, err = b.awaitRoot(ctx, s, lv, gs); again {
				continue // created meanwhile
			}
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing) {
				untilTermEnds(ctx)
				return
			}
			if errors.Is(err, zk.ErrNoAuth) {
				err = fmt.Errorf("may not list %s: %w (its ACL does not let this identity READ it); check its ACL and the bridge's credentials", root, err)
			}
			wait := bo.NextBackOff()
			b.log.Warn("cannot list discover root, retrying", "root", root, "in", wait.Round(time.Millisecond), "err", err)
			b.discoverFailed(root, err)
			sleep(ctx, wait)
			continue
		}
		bo.Reset()
		b.syncChildren(ctx, s, lv, children, gs)
		if first {
			first = false
			b.truth.forgetGone(root, children, b.observed)
		}
		b.noteRoot(lv, top && missing, top && st != nil && st.EphemeralOwner != 0)
		b.waitOn(w, root, watch, sent, listedVersion(st, missing))
		select {
		case <-watch:
		case <-w.kick: // its watch told nothing of a change (noticeSwallowed)
		case <-ctx.Done():
			return
		}
	}
}

// listedVersion is the cversion a discoverer records of its listing
// (listWatch.cversion): its root's children's, rootAbsent for a root
// found missing, -1 when not known.
func listedVersion(st *zk.Stat, missing bool) int32 {
	switch {
	case missing:
		return rootAbsent
	case st == nil:
		return -1
	}
	return st.Cversion
}

// noteRoot records whether the bridge observes anything below lv's root,
// a root given (not a level below one): not when the root is missing or
// an ephemeral node, which can never have a group below it. Observing
// nothing is not ready: a typo, or a root not made yet, must not pass a
// health check.
func (b *Bridge) noteRoot(lv *level, missing, ephemeral bool) {
	root := lv.root
	// Looked at, whatever was found: a root missing, or an ephemeral
	// node, has no group below it, and holding every heartbeat back for
	// it made every other group of the bridge stale (found by an
	// adversarial test: one root deleted, its siblings' owners were
	// "stale" in who for as long as it was gone).
	b.setUnlisted(root, false)
	switch {
	case missing:
		b.setDiscovering(root, true)
		b.discoverFailed(root, errors.New(rootMissing))
	case ephemeral:
		if !lv.warned["\x00ephemeral"] {
			lv.warned["\x00ephemeral"] = true
			b.log.Warn("discover root is an ephemeral node, which can have no children, so no group below it; "+
				"is it a single-node leader? observe it with --leader (or --watch its parent)", "root", root)
		}
		b.setDiscovering(root, true)
		b.discoverFailed(root, errors.New(rootEphemeral))
	default:
		b.setDiscovering(root, false)
	}
}

// awaitRoot stops what the children of a root found missing held and arms
// an exists watch on it: again when it was created meanwhile, missing
// when it is not there (logged the first time).
func (b *Bridge) awaitRoot(ctx context.Context, s *elect.Session, lv *level, gs *groupSet) (watch <-chan zk.Event, missing, again bool, err error) {
	root := lv.root
	for g := range gs.owned(root) {
		gs.remove(g, root)
	}
	for child, cancel := range lv.sub {
		cancel()
		delete(lv.sub, child)
	}
	b.setSkipped(root, nil, gs, nil)
	ok, watch, err := existsW(ctx, s.Conn(), root)
	if err == nil && ok {
		return nil, false, true, nil
	}
	missing = err == nil
	if missing && !lv.warned[""] {
		lv.warned[""] = true
		b.log.Warn("discover root does not exist yet; waiting for it", "root", root)
	}
	return watch, missing, false, err
}

// untilTermEnds returns once ctx, the term of a session, has ended. A
// discoverer that finds its session gone waits for it before returning:
// returning first, while the term still runs, would drop its groups as
// gone — their truth metrics (counters going back to 0) and last views
// with them — though the next session observes them again. The term ends
// with its session (sessionCtx).
func untilTermEnds(ctx context.Context) { <-ctx.Done() }

// observed says whether the bridge observes group now.
func (b *Bridge) observed(group string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.groups[group]
	return ok
}

// rootMissing is the list error of a --discover root that does not exist
// (Status.ListErrors); NotReady says so in those words.
const rootMissing = "does not exist"

// rootEphemeral is the list error of a --discover root that is an
// ephemeral node: nothing can ever be created below it.
const rootEphemeral = "is an ephemeral node, which can have no children: observe it with --leader PATH=FORMAT, or --watch its parent"

// level is one discoverer's state between listings of its root.
type level struct {
	root string
	rest []string // the levels below the root's children
	// warned: children whose skip was logged ("": the root missing).
	warned map[string]bool
	// sub: the discoverers of the children, for a deeper level.
	sub map[string]context.CancelFunc
	wg  sync.WaitGroup
	// queue: isQueueNode's answers, for the names listed.
	queue map[string]bool
	// hinted: hintLeaderLayouts looked at the children; misplaced:
	// warnMisplaced said the root is one level too deep.
	hinted, misplaced bool
	// lw is the level's discoverer's watch (listwatch.go).
	lw *listWatch
}

// stop ends the discoverers of the level's children and waits for them.
func (lv *level) stop() {
	for _, cancel := range lv.sub {
		cancel()
	}
	lv.wg.Wait()
}

// syncChildren starts observing new children of the level's root and
// stops observing the ones gone. A child that is a queue node (see
// isQueueNode) is skipped: the root is then most likely a group itself,
// given to --discover by mistake. The skipped ones go to the heartbeat's
// scope (setSkipped), which must not vouch for them.
func (b *Bridge) syncChildren(ctx context.Context, s *elect.Session, lv *level, children []string, gs *groupSet) {
	root, rest := lv.root, lv.rest
	want := map[string]bool{}
	var skipped []string
	classify(ctx, s, root, children, lv.queue)
	for _, c := range children {
		child := childOf(root, c)
		if root == "/" && c == "zookeeper" || elect.ValidatePath(child) != nil {
			continue // the server's own (no scope covers it), or no group
		}
		if len(rest) > 0 && MisplacedBelow(c, rest[0]) {
			b.warnMisplaced(lv, c)
			skipped = append(skipped, childGlob(child, rest))
			continue
		}
		if isQueueNode(c, lv.queue) {
			skipped = append(skipped, childGlob(child, rest))
			if !lv.warned[c] && len(lv.warned) < 16 {
				lv.warned[c] = true
				b.log.Warn("discover root has a child that is a queue node (ephemeral, sequentially named), not a group; skipping it (is the root itself a group? then watch it instead)",
					"root", root, "child", c)
			}
			continue
		}
		want[child] = true
		if slices.Contains(rest, "*") { // a deeper level: a discoverer of its own
			if _, ok := lv.sub[child]; !ok {
				cctx, cancel := context.WithCancel(ctx)
				lv.sub[child] = cancel
				lv.wg.Add(1)
				w := b.newListWatch(lv.lw) // before its parent's next wait: pending until listed
				go func() {
					defer lv.wg.Done()
					b.discover(cctx, s, child, rest, gs, w)
				}()
			}
			continue
		}
		gs.add(path.Join(append([]string{child}, rest...)...), root)
	}
	b.setSkipped(root, rest, gs, skipped)
	b.dropUnlisted(lv, children, want, gs)
	b.hintLeaderLayouts(ctx, s, lv, children)
}

// dropUnlisted stops what the level's root no longer lists: the
// discoverers and groups of children gone, the answers about them.
func (b *Bridge) dropUnlisted(lv *level, children []string, want map[string]bool, gs *groupSet) {
	for child, cancel := range lv.sub {
		if !want[child] {
			cancel()
			delete(lv.sub, child)
		}
	}
	for c := range lv.queue {
		if !slices.Contains(children, c) {
			delete(lv.queue, c)
		}
	}
	prefix := strings.TrimSuffix(lv.root, "/") + "/"
	for g := range gs.owned(lv.root) {
		if !want[prefix+strings.Split(strings.TrimPrefix(g, prefix), "/")[0]] {
			gs.remove(g, lv.root)
		}
	}
	gs.forgetNotGroups(lv.root, want)
}

// childrenW lists path and arms a children watch, giving up when ctx
// ends; st is path's stat.
func childrenW(ctx context.Context, c *zk.Conn, path string) (children []string, st *zk.Stat, watch <-chan zk.Event, err error) {
	type res struct {
		children []string
		st       *zk.Stat
		ch       <-chan zk.Event
		err      error
	}
	out := make(chan res, 1)
	go func() {
		cs, st, ch, err := c.ChildrenW(path)
		out <- res{cs, st, ch, err}
	}()
	select {
	case r := <-out:
		return r.children, r.st, r.ch, r.err
	case <-ctx.Done():
		return nil, nil, nil, ctx.Err()
	}
}

// existsW checks path and arms an exists watch, giving up when ctx ends.
func existsW(ctx context.Context, c *zk.Conn, path string) (bool, <-chan zk.Event, error) {
	type res struct {
		ok  bool
		ch  <-chan zk.Event
		err error
	}
	out := make(chan res, 1)
	go func() {
		ok, _, ch, err := c.ExistsW(path)
		out <- res{ok, ch, err}
	}()
	select {
	case r := <-out:
		return r.ok, r.ch, r.err
	case <-ctx.Done():
		return false, nil, ctx.Err()
	}
}
