package bridge_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

func TestParseShard(t *testing.T) {
	for in, want := range map[string]bridge.Shard{"": {}, "0/1": {K: 0, N: 1}, "1/2": {K: 1, N: 2}, "4/5": {K: 4, N: 5}} {
		got, err := bridge.ParseShard(in)
		if err != nil || got != want || got.String() != in {
			t.Errorf("ParseShard(%q) = %+v (%q), %v; want %+v", in, got, got.String(), err, want)
		}
	}
	for in, says := range map[string]string{
		"2/2": "K must be in 0..1", "-1/2": "K must be in 0..1", "1/0": "at least 1", "1": "want K/N", "a/b": "want K/N", "1/2/3": "want K/N",
	} {
		if _, err := bridge.ParseShard(in); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("ParseShard(%q): %v; want an error saying %q", in, err, says)
		}
	}
}

// The hash is Prometheus' hashmod: the last 8 bytes of the path's MD5,
// big-endian, modulo N. The expected values were computed apart from herald
// (Python's hashlib), so a change of hash cannot pass unnoticed.
func TestShardOfIsHashmod(t *testing.T) {
	for _, tc := range []struct {
		path string
		mod  [4]int // N = 2, 3, 5, 7
	}{
		{"/services/a", [4]int{1, 1, 4, 5}},
		{"/locks/orders", [4]int{1, 0, 2, 5}},
		{"/hbase/master", [4]int{0, 2, 4, 2}},
		{"/herald/demo/election", [4]int{1, 2, 4, 4}},
	} {
		for i, n := range []int{2, 3, 5, 7} {
			if got := bridge.ShardOf(tc.path, n); got != tc.mod[i] {
				t.Errorf("ShardOf(%q, %d) = %d, want %d", tc.path, n, got, tc.mod[i])
			}
		}
	}
	// Spread: 10,000 groups over 4 shards, each within 10 % of a quarter;
	// every group in exactly one shard.
	counts := make([]int, 4)
	for i := range 10_000 {
		g := fmt.Sprintf("/services/svc-%d/leader", i)
		owners := 0
		for k := range 4 {
			if (bridge.Shard{K: k, N: 4}).Owns(g) {
				owners++
				counts[k]++
			}
		}
		if owners != 1 {
			t.Fatalf("%s owned by %d shards of 4", g, owners)
		}
	}
	for k, c := range counts {
		if c < 2250 || c > 2750 {
			t.Errorf("shard %d/4 holds %d of 10,000 groups: %v", k, c, counts)
		}
	}
	if !(bridge.Shard{}).Owns("/any") || !(bridge.Shard{K: 0, N: 1}).Owns("/any") {
		t.Error("the zero shard and shard 0/1 must own every group")
	}
}

// TestShardsSplitTheGroups: two shards, the first with a standby, over one
// discover root. Every group's events come from exactly one bridge, its
// shard's; groups that appear later are taken by one shard too; when the
// first shard's active bridge dies, its standby takes over that shard alone
// and loses nothing, and the other shard goes on untouched.
func TestShardsSplitTheGroups(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root, ha := groupPath(t), groupPath(t)
	s := session(t, addrs)
	const n = 24
	groups := make([]string, 0, n+4)
	for i := range n {
		groups = append(groups, fmt.Sprintf("%s/g%02d", root, i))
	}
	leaders := map[string]*elect.Handle{}
	for _, g := range groups {
		leaders[g] = leads(t, candidate(t, s, g, "first"))
	}
	events := collect(t, url, "herald.>")
	cfg := func(name, shard string) bridge.Config {
		sh, err := bridge.ParseShard(shard)
		if err != nil {
			t.Fatal(err)
		}
		return bridge.Config{Servers: addrs, Discover: []string{root}, HAPath: ha, Shard: sh, Source: name,
			Sinks: []publish.Sink{jsSink(t, url)}}
	}
	a0 := start(t, cfg("shard0-a", "0/2"))
	waitStatus(t, a0.Bridge, 15*time.Second, "shard0-a active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	b0 := start(t, cfg("shard0-b", "0/2"))
	a1 := start(t, cfg("shard1-a", "1/2"))
	for _, r := range []*running{b0, a1} {
		waitStatus(t, r.Bridge, 15*time.Second, "bridges ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 })
	}
	if st := a1.Status(); st.Role != bridge.RoleActive || st.Shard != "1/2" {
		t.Fatalf("shard 1's only bridge: role %s, shard %q; want active, 1/2", st.Role, st.Shard)
	}
	if st := b0.Status(); st.Role != bridge.RoleStandby {
		t.Fatalf("shard 0's second bridge is %s, want standby", st.Role)
	}
	// Groups appearing later are split the same way.
	for i := n; i < n+4; i++ {
		g := fmt.Sprintf("%s/g%02d", root, i)
		groups = append(groups, g)
		leaders[g] = leads(t, candidate(t, s, g, "first"))
	}
	source := func(shard int) string { return map[int]string{0: "shard0-a", 1: "shard1-a"}[shard] }
	checkElected := func(who func(g string) string, node func(g string) string) {
		t.Helper()
		for _, g := range groups {
			waitFor(t, 15*time.Second, g+" elected", func() bool {
				return events.count(func(e publish.Event) bool { return isType(publish.LeaderElected, node(g))(e) && e.Group == g }) > 0
			})
			for _, e := range events.all() {
				if e.Group == g && e.Type == publish.LeaderElected && e.Owner != nil && e.Owner.Node == node(g) && e.Source != who(g) {
					t.Errorf("%s (shard %d) published by %s, want %s only", g, bridge.ShardOf(g, 2), e.Source, who(g))
				}
			}
		}
	}
	checkElected(func(g string) string { return source(bridge.ShardOf(g, 2)) }, func(g string) string { return leaders[g].Node() })
	for _, r := range []*running{a0, a1} {
		st := r.Status()
		for g := range st.Groups {
			if fmt.Sprintf("%d/2", bridge.ShardOf(g, 2)) != st.Shard {
				t.Errorf("shard %s observes %s, of shard %d/2", st.Shard, g, bridge.ShardOf(g, 2))
			}
		}
	}
	if got := len(a0.Status().Groups) + len(a1.Status().Groups); got != len(groups) {
		t.Errorf("the shards observe %d groups between them, want %d", got, len(groups))
	}

	// Shard 0's active bridge dies; every group changes owner at once.
	a0.Abort()
	a0.wait(t, 20*time.Second)
	second := map[string]*elect.Handle{}
	for _, g := range groups {
		ch := candidate(t, s, g, "second")
		queued(t, s, g, 2)
		if err := leaders[g].Resign(ctxT(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		second[g] = leads(t, ch)
	}
	waitStatus(t, b0.Bridge, 15*time.Second, "shard0-b active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	source = func(shard int) string { return map[int]string{0: "shard0-b", 1: "shard1-a"}[shard] }
	checkElected(func(g string) string { return source(bridge.ShardOf(g, 2)) }, func(g string) string { return second[g].Node() })
	if st := a1.Status(); st.Role != bridge.RoleActive || st.Sessions != 1 {
		t.Errorf("shard 1's bridge after shard 0's takeover: %+v", st)
	}
}

// TestShardCountMismatchRefused: a bridge that splits the groups otherwise
// than the bridges already campaigning at its HA path stops with
// ErrShardMismatch instead of publishing some groups twice or never.
func TestShardCountMismatchRefused(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root, ha := groupPath(t), groupPath(t)
	cfg := func(name, shard string) bridge.Config {
		sh, _ := bridge.ParseShard(shard)
		return bridge.Config{Servers: addrs, Discover: []string{root}, HAPath: ha, Shard: sh, Source: name, Sinks: []publish.Sink{jsSink(t, url)}}
	}
	a := start(t, cfg("two-0", "0/2"))
	waitStatus(t, a.Bridge, 15*time.Second, "two-0 active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	for shard, says := range map[string]string{"1/3": "shards of 2", "": "this one is not sharded"} {
		b := start(t, cfg("other", shard))
		b.wait(t, 20*time.Second)
		if !isErr(b.err, bridge.ErrShardMismatch) || !strings.Contains(b.err.Error(), says) {
			t.Errorf("bridge with shard %q beside shards of 2: %v; want ErrShardMismatch saying %q", shard, b.err, says)
		}
	}
	if st := a.Status(); st.Role != bridge.RoleActive {
		t.Errorf("the first bridge is %s after the refusals, want active", st.Role)
	}
	// Beside an unsharded bridge, a sharded one is refused too.
	plain := cfg("plain", "")
	plain.HAPath = ha + "-plain"
	p := start(t, plain)
	waitStatus(t, p.Bridge, 15*time.Second, "plain active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	sharded := cfg("sharded", "0/2")
	sharded.HAPath = plain.HAPath
	sb := start(t, sharded)
	sb.wait(t, 20*time.Second)
	if !isErr(sb.err, bridge.ErrShardMismatch) || !strings.Contains(sb.err.Error(), "unsharded bridges campaign") {
		t.Errorf("sharded bridge beside an unsharded one: %v; want ErrShardMismatch", sb.err)
	}
	// Once every bridge of the old count has stopped, a new count may start.
	if err := a.stop(t); err != nil {
		t.Fatal(err)
	}
	c := start(t, cfg("three-0", "0/3"))
	waitStatus(t, c.Bridge, 15*time.Second, "three-0 active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
}

// TestReadyzCountsManyGroups: beyond ReadyzGroupsLimit groups, /readyz
// counts them by state instead of listing every path.
func TestReadyzCountsManyGroups(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	s := session(t, addrs)
	n := bridge.ReadyzGroupsLimit + 1
	for _, p := range []string{path.Dir(root), root} {
		if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	var ops []any
	for i := range n {
		ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/g%04d", root, i), Acl: zk.WorldACL(zk.PermAll)})
		if len(ops) == 500 || i == n-1 {
			if _, err := s.Conn().Multi(ops...); err != nil {
				t.Fatal(err)
			}
			ops = ops[:0]
		}
	}
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, Sinks: []publish.Sink{jsSink(t, url)}})
	waitStatus(t, r.Bridge, 20*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 && len(st.Groups) == n })
	code, body := get(t, r.Handler(), "/readyz")
	var got struct {
		Groups      map[string]string `json:"groups"`
		GroupCount  int               `json:"group_count"`
		GroupStates map[string]int    `json:"group_states"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if code != 200 || got.Groups != nil || got.GroupCount != n || got.GroupStates["live"] != n {
		t.Errorf("/readyz over %d groups: %d, %d paths listed, count %d, states %v; want 200, none listed, %d live", n, code, len(got.Groups), got.GroupCount, got.GroupStates, n)
	}
}
