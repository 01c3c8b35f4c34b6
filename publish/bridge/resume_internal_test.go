package bridge

import (
	"testing"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// TestMayObserve: the reports a bridge keeps are those of groups it
// observes or would once they appear, in its shard; the rest (other
// bridges' groups in a shared bucket) are dropped.
func TestMayObserve(t *testing.T) {
	cfg := Config{
		Watch:    []string{"/locks/orders"},
		Discover: []string{"/services"},
		Leaders:  map[string]elect.SingleNode{"/controller": {}},
		Patterns: []Pattern{{Root: "/hadoop-ha", Segs: []string{"*", "ActiveStandbyElectorLock"}}},
	}
	b := &Bridge{cfg: cfg, scope: cfg.scope()}
	for group, want := range map[string]bool{
		"/locks/orders":        true,
		"/locks/other":         false,
		"/services/api":        true,
		"/services/api/deeper": false,
		"/controller":          true,
		"/hadoop-ha/ns1/ActiveStandbyElectorLock": true,
		"/hadoop-ha/ns1/other":                    false,
		"/elsewhere":                              false,
	} {
		if got := b.mayObserve(group); got != want {
			t.Errorf("mayObserve(%s) = %v; want %v", group, got, want)
		}
	}
	// In shard K of 2, only the groups that hash to K.
	for k := range 2 {
		b.cfg.Shard = Shard{K: k, N: 2}
		b.scope = b.cfg.scope()
		for _, g := range []string{"/services/a", "/services/b", "/services/c", "/services/d"} {
			if got, want := b.mayObserve(g), ShardOf(g, 2) == k; got != want {
				t.Errorf("shard %d: mayObserve(%s) = %v; want %v", k, g, got, want)
			}
		}
	}
}

// TestMergeKeepsTheNewest: of two sinks' reports on a group, the one of
// the higher zxid counts, whichever sink holds it, with its epoch.
func TestMergeKeepsTheNewest(t *testing.T) {
	all := map[string]Resume{"/a": {Owner: "a1", Zxid: 10, Epoch: 1}, "/b": {Owner: "b2", Zxid: 30, Epoch: 4}}
	merge(all, map[string]publish.LastReport{"/a": {Owner: "a2", Zxid: 20, Epoch: 2}, "/b": {Owner: "b1", Zxid: 15, Epoch: 3}, "/c": {Zxid: 5}})
	want := map[string]Resume{"/a": {Owner: "a2", Zxid: 20, Epoch: 2}, "/b": {Owner: "b2", Zxid: 30, Epoch: 4}, "/c": {Zxid: 5}}
	if len(all) != len(want) {
		t.Fatalf("merged %v; want %v", all, want)
	}
	for g, r := range want {
		if all[g] != r {
			t.Errorf("%s: %+v; want %+v", g, all[g], r)
		}
	}
}

// TestLaggardTakesTheSinkBehind: of the shared sinks' reports on a group,
// the lowest zxid counts, with its epoch; a group one of them has none of
// is measured against nothing, unless its newest report names no owner (a
// store keeps no key of a group it only saw empty).
func TestLaggardTakesTheSinkBehind(t *testing.T) {
	bucket := map[string]publish.LastReport{"/a": {Owner: "a1", Zxid: 10, Epoch: 1}, "/b": {Owner: "b2", Zxid: 30, Epoch: 4}}
	topic := map[string]publish.LastReport{"/a": {Owner: "a2", Zxid: 20, Epoch: 2}, "/b": {Owner: "b1", Zxid: 15, Epoch: 3}}
	newest := map[string]Resume{}
	merge(newest, bucket)
	merge(newest, topic)
	newest["/c"] = Resume{Owner: "c1", Zxid: 40, Recipe: elect.RecipeLock} // the audit log's alone
	newest["/d"] = Resume{Zxid: 41, Recipe: elect.RecipeLock}              // never owned: the stores keep no key
	got := laggard(newest, []map[string]publish.LastReport{bucket, topic})
	want := map[string]Resume{"/a": {Owner: "a1", Zxid: 10, Epoch: 1}, "/b": {Owner: "b1", Zxid: 15, Epoch: 3}, "/c": {Recipe: elect.RecipeLock},
		"/d": {Zxid: 41, Recipe: elect.RecipeLock}}
	if len(got) != len(want) {
		t.Fatalf("laggard %v; want %v", got, want)
	}
	for g, r := range want {
		if got[g] != r {
			t.Errorf("%s: %+v; want %+v", g, got[g], r)
		}
	}
}
