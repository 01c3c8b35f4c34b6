package bridge_test

import (
	"context"
	"errors"
	"log/slog"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/elect/ident"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/jetstream"
)

// TestDiscoverRootMissingIsNotReady: a bridge whose --discover root does
// not exist (a typo, or not made yet) observes nothing and is not ready,
// saying so; once the root and a group below it appear it is ready, and
// when the root is deleted it is not ready again.
func TestDiscoverRootMissingIsNotReady(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, Sinks: []publish.Sink{jsSink(t, url)},
		Recipes: map[string]elect.Recipe{root: elect.RecipeElection}})
	missing := "discover root " + root + " does not exist"
	st := waitStatus(t, r.Bridge, 15*time.Second, "the missing root named", func(st bridge.Status) bool {
		return strings.Contains(strings.Join(st.NotReady(), "; "), missing)
	})
	if st.Role != bridge.RoleActive || len(st.Groups) != 0 {
		t.Errorf("status with the root missing: role %s, groups %v; want active, none", st.Role, st.Groups)
	}
	if why := strings.Join(st.NotReady(), "; "); strings.Contains(why, "not listed yet") {
		t.Errorf("not ready: %q; a missing root is not a root still being listed", why)
	}
	if code, body := get(t, r.Handler(), "/readyz"); code != 503 || !strings.Contains(body, missing) {
		t.Errorf("/readyz with the root missing: %d %s", code, body)
	}

	s := session(t, addrs)
	g := root + "/one"
	leads(t, candidate(t, s, g, "x")) // creates the root too
	waitStatus(t, r.Bridge, 15*time.Second, "ready once the root exists", func(st bridge.Status) bool {
		return len(st.NotReady()) == 0 && st.Groups[g] == bridge.GroupLive
	})

	deleteTree(t, s, root)
	waitStatus(t, r.Bridge, 15*time.Second, "not ready once the root is deleted", func(st bridge.Status) bool {
		return strings.Contains(strings.Join(st.NotReady(), "; "), missing)
	})
}

// TestDiscoverRootEphemeralIsNotReady: a --discover root that is an
// ephemeral node (a single-node leader such as Kafka's /controller, given
// to the wrong flag) can have no group below it. The bridge observed
// nothing and read ready; it is not ready, saying what to give instead,
// until the root is a node that can hold groups.
func TestDiscoverRootEphemeralIsNotReady(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	s := session(t, addrs)
	if _, err := s.Conn().Create(path.Dir(root), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	if _, err := s.Conn().Create(root, []byte(`{"brokerid":1}`), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var log logLines
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, Sinks: []publish.Sink{jsSink(t, url)},
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	says := "discover root " + root + " is an ephemeral node"
	waitStatus(t, r.Bridge, 15*time.Second, "the ephemeral root named", func(st bridge.Status) bool {
		return strings.Contains(strings.Join(st.NotReady(), "; "), says) && strings.Contains(strings.Join(st.NotReady(), "; "), "--leader")
	})
	if code, body := get(t, r.Handler(), "/readyz"); code != 503 || !strings.Contains(body, says) {
		t.Errorf("/readyz with an ephemeral root: %d %s", code, body)
	}
	if n := strings.Count(log.String(), "discover root is an ephemeral node"); n != 1 {
		t.Errorf("the ephemeral root was logged %d times, want once:\n%s", n, log.String())
	}
	// Made again as a node that can hold groups: ready.
	if err := s.Conn().Delete(root, -1); err != nil {
		t.Fatal(err)
	}
	g := root + "/one"
	leads(t, candidate(t, s, g, "x"))
	waitStatus(t, r.Bridge, 15*time.Second, "ready once the root holds groups", func(st bridge.Status) bool {
		return len(st.NotReady()) == 0 && st.Groups[g] == bridge.GroupLive
	})
}

// logLines is a log that tests can read while the bridge writes it.
type logLines struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestDiscoverSkipsEphemeralChildren: ephemeral children of a discover
// root (members' registrations, as /brokers/ids holds) are not groups:
// they are skipped quietly, logged once for the root, neither observed nor
// listed as unreadable, and the bridge is ready. One deleted and made
// again as a group is observed.
func TestDiscoverSkipsEphemeralChildren(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	s := session(t, addrs)
	g := root + "/group"
	leads(t, candidate(t, s, g, "x")) // creates the root too
	var regs []string
	for _, id := range []string{"1", "2", "3"} {
		p, err := s.Conn().Create(root+"/"+id, []byte(`{"host":"h`+id+`"}`), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, p)
	}
	log := &logLines{}
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, Sinks: []publish.Sink{jsSink(t, url)},
		Recipes: map[string]elect.Recipe{root: elect.RecipeElection}, MaxRetryWait: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	waitStatus(t, r.Bridge, 15*time.Second, "the group live, registrations skipped", func(st bridge.Status) bool {
		return st.Groups[g] == bridge.GroupLive && len(st.Groups) == 1 && len(st.NotReady()) == 0 &&
			strings.Count(log.String(), "is an ephemeral node, not a group") == 1
	})
	time.Sleep(time.Second) // retries, had there been any, every 200ms
	st := r.Status()
	if len(st.Groups) != 1 || len(st.NotReady()) != 0 {
		t.Errorf("after a second: groups %v, not ready %v; want only %s, ready", st.Groups, st.NotReady(), g)
	}
	out := log.String()
	if n := strings.Count(out, "is an ephemeral node, not a group"); n != 1 || strings.Contains(out, "cannot read group") {
		t.Errorf("the registrations were logged %d times (want once), or retried:\n%s", n, out)
	}

	// A registration deleted and its name made a group at once (the
	// bridge may list the root only after both): observed.
	if err := s.Conn().Delete(regs[0], -1); err != nil {
		t.Fatal(err)
	}
	now := root + "/1"
	leads(t, candidate(t, s, now, "y"))
	waitStatus(t, r.Bridge, 15*time.Second, "the name made a group observed", func(st bridge.Status) bool {
		return st.Groups[now] == bridge.GroupLive && len(st.Groups) == 2
	})
}

// TestPatternRootMissingIsNotReady: a pattern's root (a --preset's, such
// as /hadoop-ha) that does not exist keeps the bridge not ready, as a
// --discover root does; once a group below it appears, it is ready.
func TestPatternRootMissingIsNotReady(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	r := start(t, bridge.Config{Servers: addrs, Patterns: []bridge.Pattern{{Root: root, Segs: []string{"*", "leader"}}},
		Sinks: []publish.Sink{jsSink(t, url)}, Recipes: elect.RecipeRules{root + "/*/leader": elect.RecipeElection}})
	missing := "discover root " + root + " does not exist"
	waitStatus(t, r.Bridge, 15*time.Second, "the missing pattern root named", func(st bridge.Status) bool {
		return strings.Contains(strings.Join(st.NotReady(), "; "), missing)
	})
	g := root + "/ns1/leader"
	leads(t, candidate(t, session(t, addrs), g, "x")) // creates the root too
	waitStatus(t, r.Bridge, 15*time.Second, "ready once a group below the root exists", func(st bridge.Status) bool {
		return len(st.NotReady()) == 0 && st.Groups[g] == bridge.GroupLive
	})
}

// TestDiscoverGroupNamedWithTenDigits: a child of a discover root whose
// name ends in ten digits (a job run's group named by its Unix time) is
// judged by the node, not the name: persistent, it is a group, observed and
// confirmed. A real queue node (ephemeral, sequentially named) and a
// registration (ephemeral) are skipped, and the heartbeat's scope says
// so: a reader gets stale there, not "no owner" confirmed.
func TestDiscoverGroupNamedWithTenDigits(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	s := session(t, addrs)
	g := root + "/1732650000"
	x := leads(t, candidate(t, s, g, "x")) // creates the root too
	other := root + "/nightly"
	leads(t, candidate(t, s, other, "y"))
	queue, err := s.Conn().Create(root+"/job-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := s.Conn().Create(root+"/member", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	src := "tendigits-" + strings.ReplaceAll(root, "/", "_")
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, Source: src, Sinks: []publish.Sink{jsSink(t, url)},
		Heartbeat: hb, MaxRetryWait: 200 * time.Millisecond})
	w, _ := ownerWatch(t, url, g)
	until(t, w, 15*time.Second, "x, confirmed", confirmedOwner(src, x.Node()))
	waitStatus(t, r.Bridge, 15*time.Second, "both groups live, nothing else", func(st bridge.Status) bool {
		return st.Groups[g] == bridge.GroupLive && st.Groups[other] == bridge.GroupLive && len(st.Groups) == 2
	})
	for _, p := range []string{queue, reg} {
		wq, _ := ownerWatch(t, url, p)
		last := until(t, wq, 10*time.Second, p+": the bridge's verdict", func(u jetstream.OwnerUpdate) bool {
			return u.BridgeState == publish.BridgeActive || u.ConfirmedBy == src || strings.Contains(u.StaleReason, src)
		})
		deadline := time.After(2 * time.Second) // heartbeats every 100ms
		for done := false; !done; {
			select {
			case u := <-wq.Updates():
				last = u
			case <-deadline:
				done = true
			}
		}
		if !last.Stale || !strings.Contains(last.StaleReason, "does not observe") {
			t.Errorf("%s, skipped (not a group): %+v; want stale, the bridge not observing it", p, last)
		}
	}
}

// TestDiscoverTheRoot: --discover / takes every top-level node as a group,
// save the server's own /zookeeper, which is neither observed nor in the
// heartbeat's scope.
func TestDiscoverTheRoot(t *testing.T) {
	if err := (bridge.Config{Servers: []string{"h:1"}, Discover: []string{"/"}, Sinks: []publish.Sink{jsSink(t, natsURL(t))}}).Validate(); err != nil {
		t.Fatalf("--discover /: %v; want it accepted", err)
	}
	addrs, url := zkAddrs(t), natsURL(t)
	s := session(t, addrs)
	g := "/" + strings.ReplaceAll(strings.TrimPrefix(groupPath(t), "/"), "/", "-")
	x := leads(t, candidate(t, s, g, "x"))
	t.Cleanup(func() { _ = x.Resign(context.Background()); deleteTree(t, s, g) })
	src := "root-" + strings.TrimPrefix(g, "/")
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{"/"}, Source: src, Sinks: []publish.Sink{jsSink(t, url)},
		Heartbeat: hb, MaxRetryWait: 200 * time.Millisecond})
	w, _ := ownerWatch(t, url, g)
	until(t, w, 15*time.Second, "x, confirmed", confirmedOwner(src, x.Node()))
	st := r.Status()
	if _, ok := st.Groups["/zookeeper"]; ok || st.Groups[g] != bridge.GroupLive {
		t.Errorf("groups %v: want %s live and no /zookeeper", st.Groups, g)
	}
	wz, _ := ownerWatch(t, url, "/zookeeper")
	if u := until(t, wz, 10*time.Second, "/zookeeper judged", func(u jetstream.OwnerUpdate) bool { return true }); !u.Stale {
		t.Errorf("/zookeeper, not observed: %+v; want stale", u)
	}
}

// TestDiscoverOverHadoopHAHints: --discover over a Hadoop HA root (where
// --preset hadoop-ha was meant) logs a hint naming the preset: its
// nameservices, read as groups, have no owner while a NameNode leads.
func TestDiscoverOverHadoopHAHints(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	s := session(t, addrs)
	for _, p := range []string{path.Dir(root), root, root + "/ns1", root + "/ns1/ActiveBreadCrumb"} {
		if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	if _, err := s.Conn().Create(root+"/ns1/ActiveStandbyElectorLock", []byte("nn1"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	log := &logLines{}
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, Sinks: []publish.Sink{jsSink(t, url)}, MaxRetryWait: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	waitStatus(t, r.Bridge, 15*time.Second, "ns1 read", func(st bridge.Status) bool { return st.Groups[root+"/ns1"] == bridge.GroupLive })
	if out := log.String(); strings.Count(out, `preset="hadoop-ha=`+root+`"`) != 1 {
		t.Errorf("want one hint naming --preset hadoop-ha=%s:\n%s", root, out)
	}
}

// TestPatternLevelNamedWithTenDigits: at a pattern's "*" level too (Solr
// collections named by the hour, logs_2026112614), a persistent child
// named like a queue node is followed, and its group observed.
func TestPatternLevelNamedWithTenDigits(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	s := session(t, addrs)
	g := root + "/logs_2026112614/election"
	leads(t, candidate(t, s, g, "x"))
	r := start(t, bridge.Config{Servers: addrs, Patterns: []bridge.Pattern{{Root: root, Segs: []string{"*", "election"}}},
		Sinks: []publish.Sink{jsSink(t, url)}, MaxRetryWait: 200 * time.Millisecond})
	waitStatus(t, r.Bridge, 15*time.Second, g+" live", func(st bridge.Status) bool { return st.Groups[g] == bridge.GroupLive })
}

// TestNameserviceGivenAsThePresetRoot: a Hadoop HA pattern rooted at a
// nameservice (--preset hadoop-ha=/hadoop-ha/ns1) finds its lock and
// breadcrumb where it looks for nameservices: it says the root is one
// level too deep and observes nothing, where it published
// ns1/ActiveBreadCrumb/ActiveStandbyElectorLock without an owner.
func TestNameserviceGivenAsThePresetRoot(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	ns := groupPath(t) + "/ns1"
	s := session(t, addrs)
	for _, p := range []string{path.Dir(path.Dir(ns)), path.Dir(ns), ns, ns + "/ActiveBreadCrumb"} {
		if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	if _, err := s.Conn().Create(ns+"/ActiveStandbyElectorLock", []byte("nn1"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	log := &logLines{}
	r := start(t, bridge.Config{Servers: addrs, Sinks: []publish.Sink{jsSink(t, url)}, MaxRetryWait: 200 * time.Millisecond,
		Patterns: []bridge.Pattern{{Root: ns, Segs: []string{"*", "ActiveStandbyElectorLock"}, Leader: &elect.SingleNode{Format: ident.HadoopHA}}},
		Logger:   slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	waitStatus(t, r.Bridge, 15*time.Second, "the root listed", func(bridge.Status) bool {
		return strings.Contains(log.String(), "one level too deep")
	})
	if out := log.String(); !strings.Contains(out, "parent="+path.Dir(ns)) {
		t.Errorf("the warning does not name the parent %s:\n%s", path.Dir(ns), out)
	}
	if st := r.Bridge.Status(); len(st.Groups) != 0 {
		t.Errorf("observed %v below a nameservice taken for the parent of nameservices", st.Groups)
	}
}
