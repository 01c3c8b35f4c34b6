package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// TestShardCountChangeKeepsTheGapSignal: groups published by one bridge
// are split between two shard bridges after a stop. Neither shard bridge
// has any record of its own; both read what was published last from the
// JetStream owners bucket they share. A group whose leader changed during
// the stop says gap=true in its first snapshot, from its own shard only;
// a group where nothing changed does not.
func TestShardCountChangeKeepsTheGapSignal(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	s := session(t, addrs)
	const n = 12
	var groups []string
	leaders := map[string]*elect.Handle{}
	for i := range n {
		g := fmt.Sprintf("%s/g%02d", root, i)
		groups = append(groups, g)
		leaders[g] = leads(t, candidate(t, s, g, "before"))
	}
	events := collect(t, url, "herald.>")
	one := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, Source: "unsharded", Sinks: []publish.Sink{jsSink(t, url)}})
	events.waitCount(t, 15*time.Second, "every group's first leader", n, func(e publish.Event) bool {
		return e.Source == "unsharded" && e.Type == publish.LeaderElected
	})
	if err := one.stop(t); err != nil {
		t.Fatal(err)
	}
	// During the stop the even groups change leader; the odd ones do not.
	changed := map[string]bool{}
	for i, g := range groups {
		if i%2 == 1 {
			continue
		}
		next := candidate(t, s, g, "during")
		queued(t, s, g, 2)
		if err := leaders[g].Resign(ctxT(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		leaders[g] = leads(t, next)
		changed[g] = true
	}
	for k := range 2 {
		sh := bridge.Shard{K: k, N: 2}
		start(t, bridge.Config{Servers: addrs, Discover: []string{root}, Shard: sh, Source: "shard-" + sh.String(), Sinks: []publish.Sink{jsSink(t, url)}})
	}
	firsts := map[string]publish.Event{}
	waitFor(t, 20*time.Second, "every group's snapshot from a shard bridge", func() bool {
		for _, e := range events.all() {
			if e.Source == "unsharded" || e.Owner == nil || !e.Snapshot {
				continue
			}
			if _, ok := firsts[e.Group]; !ok {
				firsts[e.Group] = e
			}
		}
		return len(firsts) == n
	})
	for _, g := range groups {
		e := firsts[g]
		want := "shard-" + (bridge.Shard{K: bridge.ShardOf(g, 2), N: 2}).String()
		if e.Source != want {
			t.Errorf("%s first published by %s; want %s", g, e.Source, want)
		}
		if e.Owner.Node != leaders[g].Node() {
			t.Errorf("%s: first snapshot names %s; want %s", g, e.Owner.Node, leaders[g].Node())
		}
		if e.Gap != changed[g] {
			t.Errorf("%s: gap=%v after a stop in which the leader changed=%v", g, e.Gap, changed[g])
		}
	}
}

// A lock whose clients' names say what it is (the classic lock- names)
// tells nothing once it is empty. A bridge that starts then (a restart, a
// new host) reads what its sinks last recorded, recipe included: the
// emptied lock is still published as a lock, not as an election, whichever
// sink remembers it.
func TestRestartKeepsAnEmptiedLockALock(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	for _, kind := range []string{"jetstream", "audit"} {
		t.Run(kind, func(t *testing.T) {
			g := groupPath(t)
			s := session(t, addrs)
			for _, p := range []string{path.Dir(g), g} {
				if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
					t.Fatal(err)
				}
			}
			node, err := s.Conn().Create(g+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
			if err != nil {
				t.Fatal(err)
			}
			log := t.TempDir() + "/audit.log"
			sink := func() publish.Sink {
				if kind == "jetstream" {
					return jsSink(t, url)
				}
				a, err := audit.New(log)
				if err != nil {
					t.Fatal(err)
				}
				return a
			}
			events := collect(t, url, "herald.*."+publish.MustTokens(g))
			cfg := func(src string) bridge.Config {
				sinks := []publish.Sink{sink()}
				if kind == "audit" {
					sinks = append(sinks, coreSink(t, url)) // remembers nothing; the test's subscriber sees the events
				}
				return bridge.Config{Servers: addrs, Watch: []string{g}, Source: src, Sinks: sinks}
			}
			first := start(t, cfg("first"))
			events.waitCount(t, 15*time.Second, "the lock acquired", 1, func(e publish.Event) bool { return e.Type == publish.LockAcquired })
			if err := s.Conn().Delete(node, -1); err != nil {
				t.Fatal(err)
			}
			events.waitCount(t, 15*time.Second, "the lock released", 1, func(e publish.Event) bool { return e.Type == publish.LockReleased && e.Source == "first" })
			if err := first.stop(t); err != nil {
				t.Fatal(err)
			}
			start(t, cfg("second"))
			waitFor(t, 15*time.Second, "the restarted bridge's snapshot", func() bool {
				for _, e := range events.all() {
					if e.Source == "second" {
						return true
					}
				}
				return false
			})
			for _, e := range events.all() {
				if e.Source == "second" && (e.Type != publish.LockReleased || e.Recipe != elect.RecipeLock) {
					t.Errorf("the restarted bridge published %s (recipe %q) for an emptied lock; want lock.released, recipe lock", e.Type, e.Recipe)
				}
			}
		})
	}
}

// coreSink is a core NATS sink: it publishes, and remembers nothing.
func coreSink(t testing.TB, url string) publish.Sink {
	t.Helper()
	s, err := natssink.New(natssink.Options{URL: url, Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A group deleted, with its owner, while no bridge looked is not left in
// the sinks as owned: a bridge that starts and does not find it under its
// discover root observes it anyway, from what the sinks last reported, and
// publishes its end as a gap, so the owners bucket no longer names the
// gone owner.
func TestGroupGoneWhileDownIsPublished(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	g := root + "/g"
	s := session(t, addrs)
	a := leads(t, candidate(t, s, g, "a"))
	events := collect(t, url, "herald.*."+publish.MustTokens(g))
	cfg := func(src string) bridge.Config {
		return bridge.Config{Servers: addrs, Discover: []string{root}, Source: src, Sinks: []publish.Sink{jsSink(t, url)}}
	}
	first := start(t, cfg("first"))
	events.waitCount(t, 15*time.Second, "a elected", 1, func(e publish.Event) bool {
		return e.Type == publish.LeaderElected && e.Owner != nil && e.Owner.Node == a.Node()
	})
	if err := first.stop(t); err != nil {
		t.Fatal(err)
	}
	admin := session(t, addrs)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	kids, _, err := admin.Conn().Children(g)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		if err := admin.Conn().Delete(g+"/"+k, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatal(err)
		}
	}
	if err := admin.Conn().Delete(g, -1); err != nil {
		t.Fatal(err)
	}
	second := start(t, cfg("second"))
	events.waitCount(t, 15*time.Second, "the gone group's end, marked as a gap, from the restarted bridge", 1, func(e publish.Event) bool {
		return e.Source == "second" && e.Type == publish.LeaderLost && e.Owner == nil && e.Gap
	})
	w, _ := ownerWatch(t, url, g)
	until(t, w, 10*time.Second, "no owner in the bucket", func(u jetstream.OwnerUpdate) bool { return u.Owner == nil })
	// Its end published, the group is not observed any more: a group that
	// does not exist is no group without an owner (its ownerless time, and
	// the alert on it, would grow for ever).
	waitStatus(t, second.Bridge, 10*time.Second, "the gone group no longer observed", func(st bridge.Status) bool {
		_, ok := st.Groups[g]
		return !ok
	})
}

// TestRestartMeasuresAgainstTheSinkThatLags: a bridge whose JetStream
// writes failed while owners came and went, stopped and restarted on the
// same audit log, marks its first snapshot of the group as a gap: the
// stream never got those tenures. Before, the audit log's newer report
// counted for every sink, and the stream got the snapshot without a gap,
// the tenures lost from it with nothing to say so.
func TestRestartMeasuresAgainstTheSinkThatLags(t *testing.T) {
	addrs := zkAddrs(t)
	ns := natsserverStart(t)
	url := ns.URL()
	g := groupPath(t)
	s := session(t, addrs)
	l, err := elect.NewLock(s, g, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 60*time.Second)
	a, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "audit.log")
	cfg := func() bridge.Config {
		as, err := audit.New(log)
		if err != nil {
			t.Fatal(err)
		}
		return bridge.Config{Servers: addrs, Watch: []string{g}, Source: "lagging", Sinks: []publish.Sink{jsSink(t, url), as},
			Lossless: []string{"audit"}, DrainTimeout: time.Second}
	}
	r1 := start(t, cfg())
	w, _ := ownerWatch(t, url, g)
	until(t, w, 15*time.Second, "a in the bucket", func(u jetstream.OwnerUpdate) bool { return u.Owner != nil && u.Owner.Owner.Node == a.Node() })

	ns.Shutdown() // the stream misses what follows; the audit log does not
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "c in the audit log", func() bool {
		evs, _ := audit.ReadAll(context.Background(), log, nil)
		for _, e := range evs {
			if e.Type == publish.LockAcquired && e.Owner != nil && e.Owner.Node == c.Node() {
				return true
			}
		}
		return false
	})
	_ = r1.stop(t) // what the stream did not get is lost with it

	ns.Restart(t)
	events := collect(t, url, "herald.*."+publish.MustTokens(g))
	start(t, cfg())
	events.waitCount(t, 20*time.Second, "c's snapshot in the stream", 1, func(e publish.Event) bool {
		return e.Snapshot && e.Owner != nil && e.Owner.Node == c.Node()
	})
	for _, e := range events.all() {
		if e.Snapshot && e.Owner != nil && e.Owner.Node == c.Node() && !e.Gap {
			t.Fatalf("c's snapshot reaches the stream without a gap, though the stream never got b's tenure: %+v", e)
		}
	}
}

// TestPlainRestartNoFalseGaps: a bridge stopped with both its sinks
// caught up, and started again on the same audit log, marks no first
// snapshot as a gap: not for an owned group, a released one, an empty one,
// one with a waiter, nor one whose owner changed while it ran. (The
// owners bucket holds no key of a group it only ever saw without an
// owner; such a group is measured against its newest report.)
func TestPlainRestartNoFalseGaps(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	s := session(t, addrs)
	owned, released, empty, waited, relock := root+"/owned", root+"/released", root+"/empty", root+"/waited", root+"/relock"
	ctx := ctxT(t, 120*time.Second)
	leads(t, candidate(t, s, owned, "a"))
	lock := func(group string) (*elect.Lock, *elect.Handle) {
		l, err := elect.NewLock(s, group, elect.CreateParents())
		if err != nil {
			t.Fatal(err)
		}
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return l, h
	}
	if _, h := lock(released); h.Release(ctx) != nil {
		t.Fatal("release")
	}
	if _, err := s.Conn().Create(empty, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	leads(t, candidate(t, s, waited, "w1"))
	candidate(t, s, waited, "w2")
	queued(t, s, waited, 2)
	l2, h2 := lock(relock)
	log := filepath.Join(t.TempDir(), "audit.log")
	cfg := func() bridge.Config {
		as, err := audit.New(log)
		if err != nil {
			t.Fatal(err)
		}
		return bridge.Config{Servers: addrs, Discover: []string{root}, Source: "plain", Sinks: []publish.Sink{jsSink(t, url), as},
			Lossless: []string{"audit"}}
	}
	r1 := start(t, cfg())
	waitStatus(t, r1.Bridge, 15*time.Second, "ready", func(st bridge.Status) bool { return len(st.Groups) == 5 && len(st.NotReady()) == 0 })
	if err := h2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	h3, err := l2.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the new relock tenure in the audit log", func() bool {
		evs, _ := audit.ReadAll(context.Background(), log, nil)
		for _, e := range evs {
			if e.Group == relock && e.Type == publish.LockAcquired && e.Owner != nil && e.Owner.Node == h3.Node() {
				return true
			}
		}
		return false
	})
	waitFor(t, 15*time.Second, "both sinks caught up", func() bool {
		st := r1.Pipeline().Stats()
		return st.Sinks["jetstream"].Delivered == st.Published && st.Sinks["audit"].Delivered == st.Published
	})
	if err := r1.stop(t); err != nil {
		t.Fatal(err)
	}
	events := collect(t, url, "herald.>")
	r2 := start(t, cfg())
	waitStatus(t, r2.Bridge, 15*time.Second, "ready again", func(st bridge.Status) bool { return len(st.Groups) == 5 && len(st.NotReady()) == 0 })
	events.waitCount(t, 15*time.Second, "a snapshot of every group", 5, func(e publish.Event) bool { return e.Snapshot && (e.Type.Gains() || e.Type.Loses()) })
	for _, e := range events.all() {
		if e.Snapshot && e.Gap {
			t.Errorf("after a plain restart, where both sinks got everything, %s's snapshot says gap: %+v", e.Group, e)
		}
	}
}
