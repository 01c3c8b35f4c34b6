package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestSnapshotThenStream: a bridge that starts publishes the state of the
// group first (leader, then the waiting candidate), then every change, in
// order, with the ids MakeID gives (the snapshot's owner's, with its
// sighting).
func TestSnapshotThenStream(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	g := groupPath(t)
	s := session(t, addrs)
	a := leads(t, candidate(t, s, g, "a"))
	bCh := candidate(t, s, g, "b")
	queued(t, s, g, 2)
	sub := collect(t, url, "herald.*."+publish.MustTokens(g))

	r := start(t, bridge.Config{Servers: addrs, Watch: []string{g}, Sinks: []publish.Sink{jsSink(t, url)}, Source: "t-bridge"})
	sub.waitCount(t, 15*time.Second, "the snapshot", 2, func(e publish.Event) bool { return e.Snapshot })

	cCh := candidate(t, s, g, "c")
	q := queued(t, s, g, 3)
	sub.waitCount(t, 10*time.Second, "c's candidate.joined", 1, isType(publish.CandidateJoined, q[2].Node))
	if err := a.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	b := leads(t, bCh)
	sub.waitCount(t, 10*time.Second, "b elected", 1, isType(publish.LeaderElected, b.Node()))

	want := []struct {
		typ      publish.Type
		node     string
		snapshot bool
	}{
		{publish.LeaderElected, a.Node(), true},
		{publish.CandidateJoined, q[1].Node, true},
		{publish.CandidateJoined, q[2].Node, false},
		{publish.LeaderLost, a.Node(), false},
		{publish.LeaderElected, b.Node(), false},
	}
	got := sub.all()
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		e := got[i]
		// The snapshot's owner event is this bridge's sighting: the id of
		// its change, and of who saw it when (WithID).
		if e.Type != w.typ || e.WithChangeID().ID != idOf(g, w.node, w.typ) || e.ID != e.WithID().ID || e.Snapshot != w.snapshot || e.Source != "t-bridge" {
			t.Errorf("event %d: %s id %s snapshot %v source %q; want %s about %s (id %s) snapshot %v",
				i, e.Type, e.ID, e.Snapshot, e.Source, w.typ, w.node, idOf(g, w.node, w.typ), w.snapshot)
		}
	}
	// The owner's id is its node's data; waiting candidates are named by
	// their node (the observer reads no data for them).
	if got[0].Owner == nil || got[0].Owner.ID != "a" || got[1].Candidate == nil || got[1].Candidate.Node != q[1].Node {
		t.Errorf("snapshot names the wrong participants: %+v / %+v", got[0].Owner, got[1].Candidate)
	}

	code, body := get(t, r.Handler(), "/readyz")
	if code != 200 {
		t.Errorf("/readyz = %d, want 200: %s", code, body)
	}
	for name, want := range map[string]string{
		"herald_bridge_active": "1", "herald_groups_observed": "1", "herald_groups_unknown": "0", "herald_zk_session_state": "1",
	} {
		if l := metric(t, r.Handler(), name); l != name+" "+want {
			t.Errorf("metric %s: got %q, want %q", name, l, name+" "+want)
		}
	}
	if _, body := get(t, r.Handler(), "/metrics"); !strings.Contains(body, `herald_events_total{sink="jetstream",type="leader.elected"}`) ||
		!strings.Contains(body, "herald_backlog") || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics lacks the pipeline's or the runtime's metrics:\n%s", body)
	}
	if code, _ := get(t, r.Handler(), "/healthz"); code != 200 {
		t.Errorf("/healthz = %d", code)
	}
	if err := r.stop(t); err != nil {
		t.Errorf("graceful stop: %v", err)
	}
	if st := r.Status(); st.Role != bridge.RoleStopped || len(st.Groups) != 0 {
		t.Errorf("after stop: role %s, groups %v", st.Role, st.Groups)
	}
	_ = cCh
}

// TestDiscover: every child of a discover root is a group; a new child is
// picked up with its snapshot, a deleted one is dropped.
func TestDiscover(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	s := session(t, addrs)
	g1, g2 := root+"/one", root+"/two"
	h1 := leads(t, candidate(t, s, g1, "x"))
	sub := collect(t, url, "herald.*."+publish.MustTokens(root)+".>")

	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, Sinks: []publish.Sink{jsSink(t, url)},
		Recipes: map[string]elect.Recipe{root: elect.RecipeElection}})
	sub.waitCount(t, 15*time.Second, "g1's snapshot", 1, isType(publish.LeaderElected, h1.Node()))
	waitStatus(t, r.Bridge, 5*time.Second, "g1 live", func(st bridge.Status) bool { return st.Groups[g1] == bridge.GroupLive })

	h2 := leads(t, candidate(t, s, g2, "y"))
	sub.waitCount(t, 10*time.Second, "g2's leader", 1, isType(publish.LeaderElected, h2.Node()))
	waitStatus(t, r.Bridge, 5*time.Second, "g2 live", func(st bridge.Status) bool { return st.Groups[g2] == bridge.GroupLive })

	if err := h1.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	deleteTree(t, s, g1)
	st := waitStatus(t, r.Bridge, 10*time.Second, "g1 dropped", func(st bridge.Status) bool { _, ok := st.Groups[g1]; return !ok })
	if len(st.Groups) != 1 || st.Groups[g2] != bridge.GroupLive {
		t.Errorf("groups after deleting g1: %v, want only %s live", st.Groups, g2)
	}
	if l := metric(t, r.Handler(), "herald_groups_observed"); l != "herald_groups_observed 1" {
		t.Errorf("metric: %q", l)
	}
	for _, e := range sub.all() {
		if e.Group != g1 && e.Group != g2 {
			t.Errorf("event for a group that is not a child of the root: %+v", e)
		}
	}
}

// TestReadyzBody: /readyz says what is not ready in JSON.
func TestReadyzBody(t *testing.T) {
	url := natsURL(t)
	b, err := bridge.New(bridge.Config{Servers: []string{"127.0.0.1:1"}, Watch: []string{"/x"}, Sinks: []publish.Sink{jsSink(t, url)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Pipeline().Close(context.Background()) })
	code, body := get(t, b.Handler(), "/readyz")
	if code != 503 {
		t.Fatalf("/readyz before Run = %d, want 503", code)
	}
	var got struct {
		Ready    bool     `json:"ready"`
		NotReady []string `json:"not_ready"`
		Role     string   `json:"role"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, body)
	}
	if got.Ready || got.Role != "starting" || !strings.Contains(strings.Join(got.NotReady, ";"), "session is connecting") {
		t.Errorf("unexpected body: %s", body)
	}
}

// TestUnreadableGroupSaysWhy: a group whose ACL refuses the bridge READ
// stays not live, and /readyz, Status and the live page say why instead of
// "not read yet"; so does a discover root. Once the ACLs admit the bridge,
// the bridge is ready and the errors are gone.
func TestUnreadableGroupSaysWhy(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	admin := session(t, addrs)
	if err := admin.Conn().AddAuth("digest", []byte("admin:pw")); err != nil {
		t.Fatal(err)
	}
	g := groupPath(t)
	if _, err := admin.Conn().Create(path.Dir(g), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	acl := append(zk.DigestACL(zk.PermAll, "admin", "pw"), zk.ACL{Perms: zk.PermCreate | zk.PermDelete, Scheme: "world", ID: "anyone"})
	root := g + "-root"
	for _, p := range []string{g, root} {
		if _, err := admin.Conn().Create(p, nil, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	r := start(t, bridge.Config{Servers: addrs, Watch: []string{g}, Discover: []string{root}, Sinks: []publish.Sink{jsSink(t, url)}, MaxRetryWait: 200 * time.Millisecond})
	want := "may not list " + g
	st := waitStatus(t, r.Bridge, 10*time.Second, "the read error", func(st bridge.Status) bool { return strings.Contains(st.ReadErrors[g], want) })
	if n := strings.Count(st.ReadErrors[g], g); n != 1 {
		t.Errorf("the read error names the group %d times: %s", n, st.ReadErrors[g])
	}
	if st.Groups[g] == bridge.GroupLive || !strings.Contains(strings.Join(st.NotReady(), "; "), g+" cannot be read: ") {
		t.Fatalf("status of an unreadable group: %v, not ready: %q", st.Groups[g], st.NotReady())
	}
	st = waitStatus(t, r.Bridge, 10*time.Second, "the root's listing error", func(st bridge.Status) bool {
		return strings.Contains(st.ListErrors[root], "may not list "+root)
	})
	if !strings.Contains(strings.Join(st.NotReady(), "; "), "discover root "+root+" cannot be listed: may not list") {
		t.Fatalf("not ready: %q; want the root's listing error", st.NotReady())
	}
	if code, body := get(t, r.Handler(), "/readyz"); code != 503 || !strings.Contains(body, want) {
		t.Errorf("/readyz = %d, want 503 saying %q:\n%s", code, want, body)
	}
	if _, body := get(t, r.Handler(), "/"); !strings.Contains(body, ">unreadable<") || !strings.Contains(body, want) {
		t.Errorf("the live page does not say the group is unreadable and why:\n%s", body)
	}
	for _, p := range []string{g, root} {
		if _, err := admin.Conn().SetACL(p, zk.WorldACL(zk.PermAll), -1); err != nil {
			t.Fatal(err)
		}
	}
	st = waitStatus(t, r.Bridge, 10*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 })
	if len(st.ReadErrors)+len(st.ListErrors) != 0 {
		t.Errorf("errors outlived the reads: %v %v", st.ReadErrors, st.ListErrors)
	}
}

// TestBlockedQueueHasNoLeader: a node no session holds, left in a group
// before a candidate joined, holds the queue up. The bridge publishes no
// leader for the waiting candidate and the page says what the queue waits
// behind; once someone deletes the node, the candidate leads and that is
// published.
func TestBlockedQueueHasNoLeader(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	s := session(t, addrs)
	g := groupPath(t)
	for _, p := range []string{path.Dir(g), g} {
		if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	left, err := s.Conn().Create(g+"/n_", []byte("left over"), zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	sub := collect(t, url, "herald.*."+publish.MustTokens(g))
	w := candidate(t, s, g, "w")
	r := start(t, bridge.Config{Servers: addrs, Watch: []string{g}, Sinks: []publish.Sink{jsSink(t, url)}})
	joined := func(e publish.Event) bool { return e.Candidate != nil && e.Candidate.ID == "w" }
	sub.waitCount(t, 15*time.Second, "the waiting candidate", 1, joined)
	if _, body := get(t, r.Handler(), "/"); !strings.Contains(body, "no owner: the queue waits behind 1 node(s)") {
		t.Errorf("the page does not say the queue waits behind the left-over node:\n%s", body)
	}
	elected := func(e publish.Event) bool {
		return e.Type == publish.LeaderElected && e.Owner != nil && e.Owner.ID == "w"
	}
	if n := sub.count(elected); n != 0 {
		t.Fatalf("published w as the leader while it waits behind %s: %+v", left, sub.all())
	}
	if err := s.Conn().Delete(left, -1); err != nil {
		t.Fatal(err)
	}
	sub.waitCount(t, 10*time.Second, "w elected once the node is gone", 1, elected)
	if h := <-w; h == nil || !h.Held() {
		t.Fatal("w does not lead after the left-over node went")
	}
}

// TestSuspectNodeIsNotALeader: a persistent node that someone creates with
// a name sorting below the live leader is published as a suspect
// candidate, never as a leader, and counted; the leader keeps its office.
func TestSuspectNodeIsNotALeader(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	s := session(t, addrs)
	g := groupPath(t)
	a := leads(t, candidate(t, s, g, "a"))
	sub := collect(t, url, "herald.*."+publish.MustTokens(g))
	r := start(t, bridge.Config{Servers: addrs, Watch: []string{g}, Sinks: []publish.Sink{jsSink(t, url)}})
	sub.waitCount(t, 15*time.Second, "a's snapshot", 1, isType(publish.LeaderElected, a.Node()))
	forged := "n_" + elect.FormatSequence(a.Sequence()-1)
	if _, err := s.Conn().Create(g+"/"+forged, []byte("impostor"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	sub.waitCount(t, 10*time.Second, "the impostor's candidate.joined", 1, isType(publish.CandidateJoined, forged))
	for _, e := range sub.all() {
		switch {
		case e.Type == publish.CandidateJoined && (e.Candidate == nil || e.Candidate.Suspect == ""):
			t.Errorf("the impostor joined without the suspect mark: %+v", e)
		case e.Type == publish.LeaderLost || e.Type == publish.LeaderElected && e.Owner.Node != a.Node():
			t.Errorf("the impostor changed the leadership: %+v", e)
		}
	}
	if l := metric(t, r.Handler(), "herald_suspect_nodes_total"); l != "herald_suspect_nodes_total 1" {
		t.Errorf("metric: %q", l)
	}
	if !a.Held() {
		t.Fatalf("the leader lost office: %v", a.Err())
	}
}

// TestTruthMetrics: per group, how long it has been without an owner, how
// often its owner changed (in all and in the last hour), gaps and suspect
// nodes; aggregates always, per-group series only within the limit. The
// ownerless figures carry the recipe, so an alert can tell an election
// without a leader from an idle lock, which it used to call critical too.
func TestTruthMetrics(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	s := session(t, addrs)
	g, empty, idle := groupPath(t), groupPath(t), groupPath(t)
	a := leads(t, candidate(t, s, g, "a"))
	for _, p := range []string{empty, idle} {
		if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	recipes := map[string]elect.Recipe{idle: elect.RecipeLock}
	r := start(t, bridge.Config{Servers: addrs, Watch: []string{g, empty, idle}, Recipes: recipes, Sinks: []publish.Sink{jsSink(t, url)}})
	waitStatus(t, r.Bridge, 15*time.Second, "all live", func(st bridge.Status) bool { return len(st.Unknown()) == 0 && len(st.Groups) == 3 })
	bCh := candidate(t, s, g, "b")
	queued(t, s, g, 2)
	if err := a.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	leads(t, bCh)
	if _, err := s.Conn().Create(g+"/n_-000000009", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	want := map[string]func(float64) bool{
		`herald_group_owner_changes_total{group="` + g + `"}`:                     func(v float64) bool { return v == 1 },
		`herald_group_owner_changes_last_hour{group="` + g + `"}`:                 func(v float64) bool { return v == 1 },
		`herald_group_suspect_nodes{group="` + g + `"}`:                           func(v float64) bool { return v == 1 },
		`herald_group_ownerless_seconds{group="` + g + `",recipe="election"}`:     func(v float64) bool { return v == 0 },
		`herald_group_ownerless_seconds{group="` + empty + `",recipe="election"}`: func(v float64) bool { return v > 0 },
		`herald_group_ownerless_seconds{group="` + idle + `",recipe="lock"}`:      func(v float64) bool { return v > 0 },
		`herald_groups_ownerless{recipe="election"}`:                              func(v float64) bool { return v == 1 },
		`herald_groups_ownerless{recipe="lock"}`:                                  func(v float64) bool { return v == 1 },
		`herald_groups_ownerless_longest_seconds{recipe="lock"}`:                  func(v float64) bool { return v > 0 },
		`herald_owner_changes_total`:                                              func(v float64) bool { return v == 1 },
	}
	deadline := time.Now().Add(10 * time.Second)
	for name, ok := range want {
		for {
			v, found := metricValue(t, r.Handler(), name)
			if found && ok(v) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("metric %s = %v (found %v)", name, v, found)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Beyond the limit, only the aggregates.
	r2 := start(t, bridge.Config{Servers: addrs, Watch: []string{g, empty, idle}, Recipes: recipes, GroupMetricsLimit: 1, Sinks: []publish.Sink{jsSink(t, url)}})
	waitStatus(t, r2.Bridge, 15*time.Second, "all live", func(st bridge.Status) bool { return len(st.Unknown()) == 0 && len(st.Groups) == 3 })
	if _, found := metricValue(t, r2.Handler(), `herald_group_ownerless_seconds{group="`+empty+`",recipe="election"}`); found {
		t.Errorf("per-group series beyond the limit")
	}
	if v, found := metricValue(t, r2.Handler(), `herald_groups_ownerless{recipe="election"}`); !found || v != 1 {
		t.Errorf("aggregate beyond the limit: %v %v", v, found)
	}
}

// metricValue reads one series from /metrics.
func metricValue(t *testing.T, h http.Handler, series string) (float64, bool) {
	t.Helper()
	_, body := get(t, h, "/metrics")
	for _, l := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(l, series+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// TestSingleNodeLeaders: a bridge observes Kafka's controller (a fixed
// single-node leader with its epoch) and Hadoop HA's lock below every
// nameservice, found as nameservices appear; each new leader is a new
// leader.elected, each departure a leader.lost.
func TestSingleNodeLeaders(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	s := session(t, addrs)
	k, h := groupPath(t), groupPath(t)
	// Every pattern's root exists (a missing one keeps the bridge not
	// ready: TestPatternRootMissingIsNotReady); nothing is below them yet.
	for _, p := range []string{path.Dir(k), k, h, k + "/collections"} {
		if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	if _, err := s.Conn().Create(k+"/controller_epoch", []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	becomes := func(broker string, epoch int) {
		t.Helper()
		if _, err := s.Conn().Multi(
			&zk.CreateRequest{Path: k + "/controller", Data: []byte(`{"version":2,"brokerid":` + broker + `,"timestamp":"1","kraftControllerEpoch":-1}`), Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral},
			&zk.SetDataRequest{Path: k + "/controller_epoch", Data: []byte(strconv.Itoa(epoch)), Version: -1},
		); err != nil {
			t.Fatal(err)
		}
	}
	// HBase's master holds before the bridge starts (its snapshot names
	// it); its data is malformed, which is counted, and named raw.
	master := []byte{0xff, 0, 0, 0, 1}
	if _, err := s.Conn().Create(k+"/master", master, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	sub := collect(t, url, "herald.>")
	r := start(t, bridge.Config{Servers: addrs, Sinks: []publish.Sink{jsSink(t, url)},
		Leaders: map[string]elect.SingleNode{k + "/controller": elect.SingleNodeFor(k + "/controller"),
			k + "/master": {Format: "hbase"}},
		Patterns: []bridge.Pattern{
			{Root: h, Segs: []string{"*", "ActiveStandbyElectorLock"}, Leader: &elect.SingleNode{Format: "hadoop-ha"}},
			{Root: k + "/collections", Segs: []string{"*", "leaders", "*", "leader"}, Leader: &elect.SingleNode{Format: "solr-leader"}},
		}})
	waitStatus(t, r.Bridge, 15*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 && len(st.Groups) == 2 })
	sub.waitCount(t, 10*time.Second, "the master's snapshot", 1, func(e publish.Event) bool {
		return e.Type == publish.LeaderElected && e.Group == k+"/master" && e.Snapshot && e.Owner != nil && e.Owner.ID != ""
	})
	if l := metric(t, r.Handler(), `herald_leader_decode_fallbacks_total{format="hbase"}`); l != `herald_leader_decode_fallbacks_total{format="hbase"} 1` {
		t.Errorf("malformed master data: metric %q", l)
	}
	becomes("1", 1)
	sub.waitCount(t, 10*time.Second, "broker 1 elected", 1, func(e publish.Event) bool {
		return e.Type == publish.LeaderElected && e.Group == k+"/controller" && e.Owner != nil && e.Owner.ID == "1"
	})
	if err := s.Conn().Delete(k+"/controller", -1); err != nil {
		t.Fatal(err)
	}
	becomes("2", 2)
	sub.waitCount(t, 10*time.Second, "broker 2 elected, epoch 2", 1, func(e publish.Event) bool {
		return e.Type == publish.LeaderElected && e.Group == k+"/controller" && e.Owner != nil && e.Owner.ID == "2" && e.Epoch == 2
	})
	sub.waitCount(t, 10*time.Second, "broker 1 lost", 1, func(e publish.Event) bool {
		return e.Type == publish.LeaderLost && e.Group == k+"/controller" && e.Previous != nil && e.Previous.ID == "1"
	})
	// A nameservice appears: its lock is found and observed.
	if _, err := s.Conn().Create(h+"/ns1", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	info := []byte{0x0a, 0x03, 'n', 's', '1', 0x12, 0x03, 'n', 'n', '1', 0x1a, 0x02, 'h', '1', 0x20, 0x50, 0x28, 0x51}
	if _, err := s.Conn().Create(h+"/ns1/ActiveStandbyElectorLock", info, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	sub.waitCount(t, 10*time.Second, "nn1 active", 1, func(e publish.Event) bool {
		return e.Type == publish.LeaderElected && e.Group == h+"/ns1/ActiveStandbyElectorLock" && e.Owner != nil && e.Owner.ID == "nn1"
	})
	// A Solr collection and shard appear, two levels down: its leader is
	// found and observed; the collection deleted, it is dropped.
	for _, p := range []string{"/collections/c1", "/collections/c1/leaders", "/collections/c1/leaders/shard1"} {
		if _, err := s.Conn().Create(k+p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	leader := k + "/collections/c1/leaders/shard1/leader"
	if _, err := s.Conn().Create(leader, []byte(`{"core":"c1_shard1_replica_n1","node_name":"10.0.0.7:8983_solr","base_url":"http://10.0.0.7:8983/solr","core_node_name":"core_node2"}`),
		zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	sub.waitCount(t, 10*time.Second, "shard1's leader", 1, func(e publish.Event) bool {
		return e.Type == publish.LeaderElected && e.Group == leader && e.Owner != nil && e.Owner.ID == "core_node2"
	})
	if l := metric(t, r.Handler(), "herald_groups_observed"); l != "herald_groups_observed 4" {
		t.Errorf("metric: %q", l)
	}
	for _, p := range []string{leader, k + "/collections/c1/leaders/shard1", k + "/collections/c1/leaders", k + "/collections/c1"} {
		if err := s.Conn().Delete(p, -1); err != nil {
			t.Fatal(err)
		}
	}
	waitStatus(t, r.Bridge, 10*time.Second, "the collection's leader dropped", func(st bridge.Status) bool { _, ok := st.Groups[leader]; return !ok })
}
