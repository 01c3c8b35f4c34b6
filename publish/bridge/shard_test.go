package bridge_test

import (
	"crypto/md5"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/audit"
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
		"+1/2": "plain numbers, e.g. 1/2", "01/2": "plain numbers, e.g. 1/2", "1/+2": "plain numbers", "0/02": "plain numbers, e.g. 0/2",
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
	// The definition, computed here another way (a big.Int of the digest's
	// last 8 bytes), agrees for paths of many shapes and any N.
	for i := range 300 {
		p := fmt.Sprintf("/g%d/%s", i, strings.Repeat("é", i%9))
		sum := md5.Sum([]byte(p))
		v := new(big.Int).SetBytes(sum[8:])
		for _, n := range []int{1, 2, 3, 16, 1000, 1 << 40} {
			want := int(new(big.Int).Mod(v, big.NewInt(int64(n))).Int64())
			if got := bridge.ShardOf(p, n); got != want {
				t.Fatalf("ShardOf(%q, %d) = %d, want %d", p, n, got, want)
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

// TestShardsSplitTheGroups: two shards over one discover root of 40
// groups, shard 0 with a standby. Every group's events come from exactly
// one bridge, its shard's, through leader changes and for groups that
// appear later, and none is missing. When shard 0's active bridge dies amid
// a round of leader changes, its standby takes over that shard alone and
// the stream misses none of the shard's events (nor holds any twice), while
// shard 1's bridge goes on publishing, untouched.
func TestShardsSplitTheGroups(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root, ha := groupPath(t), groupPath(t)
	s := session(t, addrs)
	const n, later = 40, 6
	var groups []string
	for i := range n {
		groups = append(groups, fmt.Sprintf("%s/g%02d", root, i))
	}
	// rounds[r][g] leads g in round r: "first" before the bridges start,
	// "second" with both shards active, "third" as shard 0's active dies.
	var rounds []map[string]*elect.Handle
	first := map[string]*elect.Handle{}
	for _, g := range groups {
		first[g] = leads(t, candidate(t, s, g, "first"))
	}
	rounds = append(rounds, first)
	// handOver queues a candidate name behind every group's leader; the
	// function it returns makes the leaders resign, all at once, and waits
	// for the new ones.
	handOver := func(name string) func() {
		t.Helper()
		prev, chs := rounds[len(rounds)-1], map[string]<-chan *elect.Handle{}
		for _, g := range groups {
			chs[g] = candidate(t, s, g, name)
			queued(t, s, g, 2)
		}
		return func() {
			t.Helper()
			var wg sync.WaitGroup
			for _, g := range groups {
				wg.Go(func() {
					if err := prev[g].Resign(ctxT(t, 5*time.Second)); err != nil {
						t.Errorf("%s: resign: %v", g, err)
					}
				})
			}
			wg.Wait()
			next := map[string]*elect.Handle{}
			for _, g := range groups {
				next[g] = leads(t, chs[g])
			}
			rounds = append(rounds, next)
		}
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
	stream := streamEvents(t, url, "") // the raw stream, as stored: every event the shards published
	b0 := start(t, cfg("shard0-b", "0/2"))
	a1 := start(t, cfg("shard1-a", "1/2"))
	// Shard 1's only bridge wins its own election though shard 0's is
	// held: the shards do not compete.
	waitStatus(t, a1.Bridge, 15*time.Second, "shard1-a active and ready", func(st bridge.Status) bool {
		return st.Role == bridge.RoleActive && len(st.NotReady()) == 0
	})
	waitStatus(t, b0.Bridge, 15*time.Second, "shard0-b ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 })
	if st := a1.Status(); st.Shard != "1/2" {
		t.Errorf("shard 1's bridge reports shard %q, want 1/2", st.Shard)
	}
	// The role is labelled with the shard, so that the alerts can tell a
	// shard with no active bridge (deploy/alerts.yml).
	if l := metric(t, b0.Handler(), `herald_bridge_active{shard="0/2"}`); l != `herald_bridge_active{shard="0/2"} 0` {
		t.Errorf("shard 0's standby exports %q; want its role labelled with its shard", l)
	}
	if l := metric(t, a1.Handler(), "herald_bridge_shards"); l != "herald_bridge_shards 2" {
		t.Errorf("shard 1's bridge exports %q; want the shard count 2", l)
	}
	if st := b0.Status(); st.Role != bridge.RoleStandby || st.Shard != "0/2" {
		t.Fatalf("shard 0's second bridge: role %s, shard %q; want standby, 0/2", st.Role, st.Shard)
	}

	sources := map[int]string{0: "shard0-a", 1: "shard1-a"}
	// elected waits until every group's leader of round r is published,
	// and checks that only its shard's active bridge published it.
	elected := func(r int) {
		t.Helper()
		for _, g := range groups {
			id := idOf(g, rounds[r][g].Node(), publish.LeaderElected)
			waitFor(t, 15*time.Second, fmt.Sprintf("%s elected in round %d", g, r), func() bool {
				return events.count(func(e publish.Event) bool { return e.ChangeID() == id }) > 0
			})
			want := sources[bridge.ShardOf(g, 2)]
			for _, e := range events.all() {
				if e.ChangeID() == id && e.Source != want {
					t.Errorf("%s (shard %d/2): round %d's leader published by %s, want %s only", g, bridge.ShardOf(g, 2), r, e.Source, want)
				}
			}
		}
	}
	elected(0)
	// Groups appearing later are split the same way.
	for i := n; i < n+later; i++ {
		g := fmt.Sprintf("%s/g%02d", root, i)
		groups = append(groups, g)
		first[g] = leads(t, candidate(t, s, g, "first"))
	}
	elected(0)
	handOver("second")()
	elected(1)
	owned := map[string]string{} // group -> the shard observing it
	for _, r := range []*running{a0, a1} {
		st := r.Status()
		for g := range st.Groups {
			if want := fmt.Sprintf("%d/2", bridge.ShardOf(g, 2)); want != st.Shard {
				t.Errorf("shard %s observes %s, of shard %s", st.Shard, g, want)
			}
			if other, dup := owned[g]; dup {
				t.Errorf("%s observed by shards %s and %s", g, other, st.Shard)
			}
			owned[g] = st.Shard
		}
	}
	if len(owned) != len(groups) || len(a0.Status().Groups) == 0 || len(a1.Status().Groups) == 0 {
		t.Errorf("the shards observe %d and %d of %d groups; want all between them, some in each",
			len(a0.Status().Groups), len(a1.Status().Groups), len(groups))
	}
	if got := events.count(func(e publish.Event) bool { return e.Source == "shard0-b" }); got != 0 {
		t.Errorf("shard 0's standby published %d events while shard0-a was active", got)
	}

	// Shard 0's active bridge dies without draining, and every group
	// changes leader meanwhile: shard 0's while it may have no active
	// bridge at all.
	resign := handOver("third")
	a0.Abort()
	resign()
	if err := a0.wait(t, 20*time.Second); !isErr(err, bridge.ErrAborted) {
		t.Errorf("aborted bridge returned %v", err)
	}
	waitStatus(t, b0.Bridge, 15*time.Second, "shard0-b active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	sources[0] = "shard0-b"
	elected(2)
	if st := a1.Status(); st.Role != bridge.RoleActive || st.Sessions != 1 {
		t.Errorf("shard 1's bridge after shard 0's takeover: role %s, %d sessions; want active on its first", st.Role, st.Sessions)
	}

	// The stream holds every change of every group once, each from a
	// bridge of the group's shard.
	required := map[string]string{}
	for _, g := range groups {
		for r, leaders := range rounds {
			required[idOf(g, leaders[g].Node(), publish.LeaderElected)] = fmt.Sprintf("%s: round %d elected", g, r)
			if r < len(rounds)-1 {
				required[idOf(g, leaders[g].Node(), publish.LeaderLost)] = fmt.Sprintf("%s: round %d lost", g, r)
			}
		}
	}
	allowed := map[int][]string{0: {"shard0-a", "shard0-b"}, 1: {"shard1-a"}}
	waitFor(t, 15*time.Second, "every change in the stream", func() bool {
		seen := 0
		for _, e := range stream.all() {
			if _, ok := required[e.ChangeID()]; ok {
				seen++
			}
		}
		return seen >= len(required)
	})
	// A sighting of an owner (a snapshot) has an id of its own, and
	// tells the change under ChangeID.
	stored, told := map[string]int{}, map[string]bool{}
	for _, e := range stream.all() {
		stored[e.ID]++
		told[e.ChangeID()] = true
		if k := bridge.ShardOf(e.Group, 2); !slices.Contains(allowed[k], e.Source) {
			t.Errorf("%s %s of shard %d/2 stored from %s, want one of %v", e.Type, e.Group, k, e.Source, allowed[k])
		}
	}
	for id, what := range required {
		if !told[id] || stored[id] > 1 {
			t.Errorf("%s stored %d times (told: %v), want once", what, stored[id], told[id])
		}
	}
	for id, n := range stored {
		if n > 1 {
			t.Errorf("event %s stored %d times, want once", id, n)
		}
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
	// Once every bridge of the old count has stopped, a new count may start,
	// also where a leader deposed by a suspension left its office (release
	// record) in the old election.
	if err := a.stop(t); err != nil {
		t.Fatal(err)
	}
	s := session(t, addrs)
	if _, err := s.Conn().Create(ha+"/shard-0-of-2/"+elect.OfficeNode, []byte(`{"herald":1}`), 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	c := start(t, cfg("three-0", "0/3"))
	waitStatus(t, c.Bridge, 15*time.Second, "three-0 active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
}

// TestShardCountMismatchAtTheSameMoment: two bridges with different shard
// counts started together both pass the check before campaigning; as
// leaders they check again, and the one whose candidate came later
// refuses. Never are both active, and one always is (neither refusing
// for the other would leave the groups unpublished).
func TestShardCountMismatchAtTheSameMoment(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	for round := range 5 {
		ha := groupPath(t)
		cfg := func(name, shard string) bridge.Config {
			sh, _ := bridge.ParseShard(shard)
			return bridge.Config{Servers: addrs, Discover: []string{root}, HAPath: ha, Shard: sh, Source: name, Sinks: []publish.Sink{jsSink(t, url)}}
		}
		two, three := cfg("two-0", "0/2"), cfg("three-0", "0/3")
		var a, b *running
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); a = start(t, two) }()
		go func() { defer wg.Done(); b = start(t, three) }()
		wg.Wait()
		deadline := time.Now().Add(20 * time.Second)
		var stopped, active *running
		for stopped == nil || active == nil {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: after 20s, %s is %s and %s is %s; want one refused and one active",
					round, two.Source, a.Status().Role, three.Source, b.Status().Role)
			}
			ra, rb := a.Status().Role, b.Status().Role
			if ra == bridge.RoleActive && rb == bridge.RoleActive {
				t.Fatalf("round %d: bridges of 2 and of 3 shards both active at %s", round, ha)
			}
			stopped, active = nil, nil
			for _, r := range []*running{a, b} {
				select {
				case <-r.done:
					if stopped != nil {
						t.Fatalf("round %d: both bridges refused, leaving the groups unpublished: %v; %v", round, a.err, b.err)
					}
					stopped = r
				default:
					if r.Status().Role == bridge.RoleActive {
						active = r
					}
				}
			}
			time.Sleep(2 * time.Millisecond) // polling interval, not ordering
		}
		if !isErr(stopped.err, bridge.ErrShardMismatch) {
			t.Fatalf("round %d: the bridge that stopped says %v; want ErrShardMismatch", round, stopped.err)
		}
		if err := active.stop(t); err != nil {
			t.Fatal(err)
		}
	}
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

// A sharded bridge's default source names its shard: the README's layout
// runs a copy of several shards on one host, and a heartbeat vouches for
// every value its source wrote, so two shards sharing a name kept each
// other's gone owners fresh.
func TestShardedDefaultSourceNamesTheShard(t *testing.T) {
	sh, _ := bridge.ParseShard("1/3")
	for _, tc := range []struct {
		shard bridge.Shard
		want  string
	}{{sh, "/shard-1-of-3"}, {bridge.Shard{}, ""}} {
		sink, err := audit.New(t.TempDir() + "/a.log")
		if err != nil {
			t.Fatal(err)
		}
		b, err := bridge.New(bridge.Config{Servers: []string{"zk:2181"}, Watch: []string{"/a"}, Shard: tc.shard, Sinks: []publish.Sink{sink}})
		if err != nil {
			t.Fatal(err)
		}
		src := b.Source()
		if !strings.HasPrefix(src, "herald-bridge@") || !strings.HasSuffix(src, tc.want) || tc.want == "" && strings.Contains(src, "/shard-") {
			t.Errorf("default source with shard %+v: %q; want herald-bridge@<host>%s", tc.shard, src, tc.want)
		}
		if err := publish.ValidateSource(src); err != nil {
			t.Errorf("default source %q: %v", src, err)
		}
	}
}
