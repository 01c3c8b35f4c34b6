package bridge

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/zkherald/herald/publish"
)

// TestWideScopeKeepsTheShard: a scope with more watched paths than a
// heartbeat names is widened to their parents' children, or past as many
// parents to their depth, and still covers every watched path of its
// shard and no group of another shard.
func TestWideScopeKeepsTheShard(t *testing.T) {
	for _, parents := range []int{1, maxScopeWatch + 1} {
		sc := &publish.Scope{ShardK: 1, ShardN: 3, Discover: []string{"/d"}}
		for i := range maxScopeWatch + 1 {
			sc.Watch = append(sc.Watch, fmt.Sprintf("/p%d/g%d", i%parents, i))
		}
		wide := wideScope(sc)
		if len(wide.Watch) != 0 || len(wide.Patterns) > maxScopeWatch {
			t.Fatalf("%d parents: %d watched paths and %d patterns, want none and at most %d", parents, len(wide.Watch), len(wide.Patterns), maxScopeWatch)
		}
		for _, g := range append(sc.Watch, "/d/x", "/d/x/deeper") {
			if got, want := wide.Covers(g), sc.Covers(g); got != want {
				t.Errorf("%d parents: Covers(%s) = %v, want %v", parents, g, got, want)
			}
		}
		for i := 0; ; i++ { // a sibling of the watched paths in another shard
			if g := fmt.Sprintf("/p0/other%d", i); publish.ShardOf(g, 3) != 1 {
				if wide.Covers(g) {
					t.Errorf("%d parents: covers %s, of another shard", parents, g)
				}
				break
			}
		}
	}
}

// TestWideScopeLeavesOutUnwatchedSiblings: a bridge restarted under the
// same source with one watched path fewer, among more than a heartbeat
// names, must not confirm the path it dropped. The globs of the watched
// paths' parents took in every sibling, so the owner it had written of
// the dropped path stayed fresh for as long as it heartbeated.
func TestWideScopeLeavesOutUnwatchedSiblings(t *testing.T) {
	for _, parents := range []int{1, maxScopeWatch + 1} {
		sc := &publish.Scope{}
		for i := range maxScopeWatch + 2 {
			sc.Watch = append(sc.Watch, fmt.Sprintf("/p%d/g%d", i%parents, i))
		}
		dropped := sc.Watch[len(sc.Watch)-1]
		sc.Watch = sc.Watch[:len(sc.Watch)-1]
		wide := wideScope(sc)
		for _, g := range sc.Watch {
			if !wide.Covers(g) {
				t.Fatalf("%d parents: a watched path, %s, is not covered", parents, g)
			}
		}
		if wide.Covers(dropped) {
			t.Errorf("%d parents: %s, no longer watched, is covered", parents, dropped)
		}
		missed := 0
		for i := range 10000 {
			if wide.Covers(fmt.Sprintf("/p0/sibling%d", i)) {
				missed++
			}
		}
		if missed > 10 {
			t.Errorf("%d parents: %d of 10,000 unwatched siblings covered, want about one", parents, missed)
		}
	}
}

// TestWideScopeWatchedPathOutlivesSkip: a watched path beside a discover
// root's children that are not groups is still covered when the skip
// globs, too many to name, widen to the root's every child: Watch is read
// before Skip, and so must the watched paths a heartbeat gives by glob.
func TestWideScopeWatchedPathOutlivesSkip(t *testing.T) {
	sc := &publish.Scope{Discover: []string{"/jobs"}}
	for i := range maxScopeWatch + 1 {
		sc.Watch = append(sc.Watch, fmt.Sprintf("/jobs/g%d", i))
	}
	wide := wideScope(sc)
	wide.Skip = []string{"/jobs/*"}
	if !wide.Covers("/jobs/g7") {
		t.Errorf("a watched path is not covered once the skip globs take in its siblings")
	}
}

// TestWideScopeOfManyPathsFitsAMessage: the scope of 100,000 watched
// paths, as a heartbeat's JSON carries it, fits a NATS message (1 MB by
// default) with room to spare.
func TestWideScopeOfManyPathsFitsAMessage(t *testing.T) {
	sc := &publish.Scope{}
	for i := range 100000 {
		sc.Watch = append(sc.Watch, fmt.Sprintf("/tenants/t%d/jobs/job-%d", i%5000, i))
	}
	b, err := json.Marshal(publish.Heartbeat{Source: "s", Scope: wideScope(sc)})
	if err != nil || len(b) > 600<<10 {
		t.Fatalf("heartbeat of 100,000 watched paths: %d bytes, err %v; want at most 600 kB", len(b), err)
	}
}

// TestWideScopeOfTooManyPathsStillFitsAMessage: past what the set holds
// at its best, it keeps its size: the heartbeat of 1,000,000 watched
// paths still fits a NATS message (1 MB by default), and still tells
// most unwatched paths apart.
func TestWideScopeOfTooManyPathsStillFitsAMessage(t *testing.T) {
	sc := &publish.Scope{}
	for i := range 1000000 {
		sc.Watch = append(sc.Watch, fmt.Sprintf("/jobs/job-%d", i))
	}
	wide := wideScope(sc)
	b, err := json.Marshal(publish.Heartbeat{Source: "s", Scope: wide})
	if err != nil || len(b) > 600<<10 {
		t.Fatalf("heartbeat of 1,000,000 watched paths: %d bytes, err %v; want at most 600 kB", len(b), err)
	}
	missed := 0
	for i := range 1000 {
		if wide.Covers(fmt.Sprintf("/jobs/other-%d", i)) {
			missed++
		}
	}
	if missed > 500 || !wide.Covers("/jobs/job-7") {
		t.Errorf("%d of 1,000 unwatched paths covered (want under half), or a watched one not", missed)
	}
}

// TestWideScopeReadBackFromJSON: a reader has the scope from the
// heartbeat's JSON: the set of watched paths must read back as written,
// and one that is no set (written by hand, cut short) must confirm none
// of the paths it stood for, rather than every sibling or the heartbeat
// failing to read.
func TestWideScopeReadBackFromJSON(t *testing.T) {
	sc := &publish.Scope{}
	for i := range maxScopeWatch + 1 {
		sc.Watch = append(sc.Watch, fmt.Sprintf("/p/g%d", i))
	}
	b, err := json.Marshal(publish.Heartbeat{Source: "s", Scope: wideScope(sc)})
	if err != nil {
		t.Fatal(err)
	}
	var hb publish.Heartbeat
	if err := json.Unmarshal(b, &hb); err != nil {
		t.Fatal(err)
	}
	if !hb.Scope.Covers("/p/g7") || hb.Scope.Covers("/p/sibling") {
		t.Errorf("read back: /p/g7 covered %v (want true), /p/sibling covered %v (want false)", hb.Scope.Covers("/p/g7"), hb.Scope.Covers("/p/sibling"))
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	raw["scope"].(map[string]any)["watch_set"] = "bm90IGEgc2V0"
	b, _ = json.Marshal(raw)
	hb = publish.Heartbeat{}
	if err := json.Unmarshal(b, &hb); err != nil {
		t.Fatalf("a heartbeat whose set is no set: %v; want it read", err)
	}
	if hb.Scope.Covers("/p/g7") {
		t.Errorf("a set that is no set confirms /p/g7: it should confirm none of the paths it stood for")
	}
}
