package bridge

import (
	"context"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// Skipped children. A discover root's child (or a pattern level's) that is
// not a group is skipped: a queue node (an ephemeral node named
// PREFIX-NNNNNNNNNN: the root is itself a group, given by mistake), herald's
// own bookkeeping nodes, a member's registration (an ephemeral node found
// by its observer, groupSet.skipNotAGroup). The heartbeat's scope covers
// every child of a root, so it names those in Scope.Skip: a reader asking
// about one gets "stale", never "no owner" confirmed.

// maxScopeSkip bounds the skipped paths a heartbeat names; beyond it, the
// roots with skipped children are named whole (none of their children
// confirmed), which errs stale.
const maxScopeSkip = 1000

// skips is what the discoverers skip, by root (guarded by Bridge.mu).
type skips struct {
	// byName: the children skipped at the root's last listing, as globs
	// of the group paths below them.
	byName map[string][]string
	// wide: a glob of every group a root's children hold.
	wide map[string]string
	// set: the current observation's groupSet, whose notGroups are the
	// registrations skipped.
	set *groupSet
}

// globQuote quotes the characters path.Match reads in a node name.
func globQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

// childGlob is the glob of the groups at or below child, a child of a
// level whose remaining levels are rest ("*" for every child).
func childGlob(child string, rest []string) string {
	out := strings.TrimSuffix(globQuote(child), "/") // the root "/"
	for _, seg := range rest {
		if seg != "*" {
			seg = globQuote(seg)
		}
		out += "/" + seg
	}
	return out
}

// childOf is the path of child c of root.
func childOf(root, c string) string { return path.Join(root, c) }

// setSkipped records the globs a root's last listing skipped (none: the
// root is forgotten), and the glob of all its children.
func (b *Bridge) setSkipped(root string, rest []string, gs *groupSet, globs []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	sk := &b.skipped
	sk.set = gs
	if len(globs) == 0 {
		delete(sk.byName, root)
		delete(sk.wide, root)
		return
	}
	if sk.byName == nil {
		sk.byName, sk.wide = map[string][]string{}, map[string]string{}
	}
	sk.byName[root] = globs
	sk.wide[root] = childGlob(root, append([]string{"*"}, rest...))
}

// scopeNow is sc with what the bridge skips now (Scope.Skip).
func (b *Bridge) scopeNow(sc *publish.Scope) *publish.Scope {
	if sc == nil {
		return nil
	}
	b.mu.Lock()
	gs := b.skipped.set
	var globs []string
	wide := map[string]bool{}
	for root, gl := range b.skipped.byName {
		globs = append(globs, gl...)
		wide[b.skipped.wide[root]] = true
	}
	b.mu.Unlock()
	if gs != nil {
		gs.mu.Lock()
		for g, root := range gs.notGroups {
			globs = append(globs, globQuote(g))
			below := strings.Split(strings.TrimPrefix(g, strings.TrimSuffix(root, "/")+"/"), "/")
			wide[childGlob(root, append([]string{"*"}, below[1:]...))] = true
		}
		gs.mu.Unlock()
	}
	if len(globs) == 0 {
		return sc
	}
	if len(globs) > maxScopeSkip {
		globs = globs[:0]
		for w := range wide {
			globs = append(globs, w)
		}
	}
	slices.Sort(globs)
	out := *sc
	out.Skip = globs
	return &out
}

// isQueueNode reports whether child c of root is a queue node: named like
// one (or herald's own bookkeeping) and ephemeral. A persistent node is a
// group whatever its name (a job run's, named by its Unix time), and so is
// a node with children. known holds the answers classify found.
func isQueueNode(c string, known map[string]bool) bool {
	if c == elect.OfficeNode || c == elect.CheckpointNode {
		return true
	}
	return known[c]
}

// classify reads, for the children of root named like queue nodes and not
// in known yet, whether each is ephemeral (a queue node), many at once: a
// group given to --discover by mistake may hold thousands. A node gone or
// not read is not recorded: observed, its observer tells an ephemeral node
// (groupSet.skipNotAGroup), and the next listing asks again.
func classify(ctx context.Context, s *elect.Session, root string, children []string, known map[string]bool) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, 64)
	for _, c := range children {
		if _, seq := elect.ParseSequence(c); !seq {
			continue
		}
		// Read under mu: the stats started above write known as they
		// answer (reading it bare crashed the bridge, "concurrent map
		// read and map write", found by an adversarial test).
		mu.Lock()
		_, ok := known[c]
		mu.Unlock()
		if ok {
			continue
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			st, err := statNode(ctx, s.Conn(), childOf(root, c))
			if err == nil {
				mu.Lock()
				known[c] = st.EphemeralOwner != 0
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// statNode reads path's stat, giving up when ctx ends.
func statNode(ctx context.Context, c *zk.Conn, p string) (*zk.Stat, error) {
	type res struct {
		st  *zk.Stat
		err error
	}
	out := make(chan res, 1)
	go func() {
		ok, st, err := c.Exists(p)
		if err == nil && !ok {
			err = zk.ErrNoNode
		}
		out <- res{st, err}
	}()
	select {
	case r := <-out:
		return r.st, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
