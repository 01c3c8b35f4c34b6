package bridge_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestTruthKeptAcrossSessions: when the bridge's ZooKeeper session expires
// and is replaced, a discovered group it still observes keeps its truth
// metrics — a counter that went down would break rate() and the shipped
// alerts — and one deleted meanwhile is forgotten.
func TestTruthKeptAcrossSessions(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	flap, empty, gone := root+"/flap", root+"/empty", root+"/gone"
	s := session(t, addrs)
	a := leads(t, candidate(t, s, flap, "a"))
	bCh := candidate(t, s, flap, "b")
	queued(t, s, flap, 2)
	leads(t, candidate(t, s, gone, "g"))
	mkdir(t, s, empty)
	p := proxy(t, addrs[0])

	r := start(t, bridge.Config{Servers: []string{p.Addr()}, SessionTimeout: time.Second, MaxRetryWait: 200 * time.Millisecond,
		Discover: []string{root}, Recipes: map[string]elect.Recipe{root: elect.RecipeElection}, Sinks: []publish.Sink{jsSink(t, url)}})
	waitStatus(t, r.Bridge, 15*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 && len(st.Groups) == 3 })
	if err := a.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	leads(t, bCh)
	changes := `herald_group_owner_changes_total{group="` + flap + `"}`
	waitFor(t, 10*time.Second, "one owner change of "+flap, func() bool {
		v, ok := metricValue(t, r.Handler(), changes)
		return ok && v == 1
	})
	ownerless := `herald_group_ownerless_seconds{group="` + empty + `",recipe="election"}`
	before, _ := metricValue(t, r.Handler(), ownerless)

	p.Blackhole(true)
	waitStatus(t, r.Bridge, 10*time.Second, "session lost", func(st bridge.Status) bool { return st.Session == "lost" })
	deleteTree(t, s, gone)
	p.Blackhole(false)
	waitStatus(t, r.Bridge, 15*time.Second, "a new session, ready", func(st bridge.Status) bool {
		return st.Sessions == 2 && len(st.NotReady()) == 0 && len(st.Groups) == 2
	})

	if v, ok := metricValue(t, r.Handler(), changes); !ok || v != 1 {
		t.Errorf("%s = %v (found %v) after the session was replaced, want 1", changes, v, ok)
	}
	if v, ok := metricValue(t, r.Handler(), "herald_owner_changes_last_hour"); !ok || v != 1 {
		t.Errorf("herald_owner_changes_last_hour = %v (found %v) after the session was replaced, want 1", v, ok)
	}
	if v, ok := metricValue(t, r.Handler(), ownerless); !ok || v <= before {
		t.Errorf("%s = %v (found %v) after the session was replaced; it was %v before: ownerless since then", ownerless, v, ok, before)
	}
	if v, ok := metricValue(t, r.Handler(), `herald_group_owner_changes_total{group="`+gone+`"}`); ok {
		t.Errorf("a group deleted while the session was lost still has metrics (owner changes %v)", v)
	}
}

// mkdir creates path, whose parent exists, as an empty node.
func mkdir(t *testing.T, s *elect.Session, path string) {
	t.Helper()
	if _, err := s.Conn().Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
}
