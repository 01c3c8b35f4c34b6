package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
)

// TestWhoJSONSaysNoLongerConfirmed: the bridge that wrote the owner is
// restarted under the same --source for another group only, so its
// heartbeats leave the group out. who prints "no longer confirmed (…)"
// and --json has no "confirmed"; before, nothing in the JSON told a
// script that the value had been confirmed (publish.Freshness.OutOfScope
// was not marshalled), so it read like a value no bridge ever confirmed.
func TestWhoJSONSaysNoLongerConfirmed(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	st := newStaleSetup(t, "rescoped-bridge")
	if err := st.bridge.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := st.bridge.wait(t, 15*time.Second); code != 0 {
		t.Fatalf("bridge exit %d after SIGTERM", code)
	}
	other := start(t, nil, append([]string{"bridge", "--watch", st.group + "-other", "--nats", st.natsURL, "--kafka", st.kafka,
		"--heartbeat", "200ms", "--source", st.source}, zkFlags(t)...)...)
	for _, src := range [][]string{{"--nats", st.natsURL}, {"--kafka", st.kafka}} {
		var r whoReport
		var out, stderr string
		var code int
		// Stale at once (the stop); out of scope once the restarted
		// bridge's first heartbeat is read.
		if err := waitFor(30*time.Second, func() bool {
			out, stderr, code = heraldRun(t, nil, append([]string{"who", st.group, "--json"}, src...)...)
			r = whoReport{}
			return json.Unmarshal([]byte(out), &r) == nil && strings.Contains(r.StaleReason, "does not observe the group")
		}); err != nil {
			t.Fatalf("who %v --json never said the bridge no longer observes the group: exit %d:\n%s%s\nbridge:\n%s", src, code, out, stderr, other.out)
		}
		if code != exitStale || !r.Stale || r.Confirmed != nil || r.ConfirmedBy != st.source || r.Owner == nil || r.Owner.ID != "worker-1" {
			t.Errorf("who %v --json: exit %d, want %d, stale, no confirmed, worker-1 by %s:\n%s", src, code, exitStale, st.source, out)
		}
		if !r.NoLongerConfirmed || !strings.Contains(out, `"no_longer_confirmed":true`) {
			t.Errorf("who %v --json does not say the owner is no longer confirmed (it was, before the bridge's scope changed):\n%s", src, out)
		}
		if !strings.Contains(stderr, "no longer confirmed (") {
			t.Errorf("who %v --json: stderr does not say why it exits %d: %s", src, exitStale, stderr)
		}
	}
	if out, _, _ := heraldRun(t, nil, "who", "--help"); !strings.Contains(out, `"no_longer_confirmed"`) {
		t.Errorf("who --help does not name the no_longer_confirmed field:\n%s", out)
	}
}

// TestShardedBridgeWithManyWatchesConfirmsOnlyItsShard: the bridge that
// wrote a group's owner restarts under the same --source as a shard the
// group is not in (the shards' count changed), watching more paths than a
// heartbeat names. Its heartbeats must still leave the group out: they
// used to carry no scope at all, so they confirmed every group, the other
// shards' too, and who named the owner the bridge no longer observes as
// fresh for as long as it heartbeated.
func TestShardedBridgeWithManyWatchesConfirmsOnlyItsShard(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	natsURL, g, source := natsserver.Start(t).URL(), uniq(t), "resharded-bridge"
	s := zkSession(t)
	campaign(t, s, g, "worker-1")
	first := start(t, nil, append([]string{"bridge", "--watch", g, "--nats", natsURL, "--heartbeat", "200ms", "--source", source}, zkFlags(t)...)...)
	fresh := func(group, owner string) bool {
		out, _, code := heraldRun(t, nil, "who", group, "--json", "--nats", natsURL)
		var r whoReport
		return code == 0 && json.Unmarshal([]byte(out), &r) == nil && r.Owner != nil && r.Owner.ID == owner && !r.Stale && r.ConfirmedBy == source
	}
	if err := waitFor(30*time.Second, func() bool { return fresh(g, "worker-1") }); err != nil {
		t.Fatalf("who never named worker-1 confirmed; bridge:\n%s", first.out)
	}
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := first.wait(t, 15*time.Second); code != 0 {
		t.Fatalf("bridge exit %d after SIGTERM", code)
	}
	k := 1 - publish.ShardOf(g, 2) // the shard g is not in
	args := []string{"bridge", "--shard", fmt.Sprintf("%d/2", k), "--nats", natsURL, "--heartbeat", "200ms", "--source", source}
	mine := ""
	for i := range 1001 { // more than a heartbeat names (maxScopeWatch)
		w := fmt.Sprintf("%s-w%d", g, i)
		if mine == "" && publish.ShardOf(w, 2) == k {
			mine = w
		}
		args = append(args, "--watch", w)
	}
	campaign(t, s, mine, "worker-2")
	second := start(t, nil, append(args, zkFlags(t)...)...)
	if err := waitFor(60*time.Second, func() bool { return fresh(mine, "worker-2") }); err != nil {
		t.Fatalf("the sharded bridge never confirmed its own group's owner; bridge:\n%s", second.out)
	}
	out, stderr, code := heraldRun(t, nil, "who", g, "--json", "--nats", natsURL)
	var r whoReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitStale || !r.Stale || !strings.Contains(r.StaleReason, "does not observe the group") {
		t.Fatalf("who of a group outside the bridge's shard: exit %d, want %d, stale as not observed:\n%s%s", code, exitStale, out, stderr)
	}
}

// TestBridgeWithManyWatchesConfirmsNoDroppedSibling: the bridge that wrote
// a group's owner restarts under the same --source watching more paths
// than a heartbeat names, the group no longer among them but its siblings
// are. Its heartbeats must leave the group out: they gave the watched
// paths as globs of their parent's children, which took the dropped group
// in, and who named the owner the bridge no longer observes as fresh.
func TestBridgeWithManyWatchesConfirmsNoDroppedSibling(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	natsURL, g, source := natsserver.Start(t).URL(), uniq(t), "narrowed-bridge-"+newRunID()[:8]
	s := zkSession(t)
	campaign(t, s, g+"/dropped", "worker-1")
	campaign(t, s, g+"/kept", "worker-2")
	args := []string{"bridge", "--nats", natsURL, "--heartbeat", "200ms", "--source", source}
	for i := range 1001 { // more than a heartbeat names (maxScopeWatch)
		args = append(args, "--watch", fmt.Sprintf("%s/w%d", g, i))
	}
	args = append(args, "--watch", g+"/kept")
	first := start(t, nil, append(append(args, "--watch", g+"/dropped"), zkFlags(t)...)...)
	fresh := func(group, owner string) bool {
		out, _, code := heraldRun(t, nil, "who", group, "--json", "--nats", natsURL)
		var r whoReport
		return code == 0 && json.Unmarshal([]byte(out), &r) == nil && r.Owner != nil && r.Owner.ID == owner && !r.Stale && r.ConfirmedBy == source
	}
	if err := waitFor(60*time.Second, func() bool { return fresh(g+"/dropped", "worker-1") }); err != nil {
		t.Fatalf("who never named worker-1 confirmed; bridge:\n%s", first.out)
	}
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := first.wait(t, 15*time.Second); code != 0 {
		t.Fatalf("bridge exit %d after SIGTERM", code)
	}
	second := start(t, nil, append(args, zkFlags(t)...)...)
	if err := waitFor(60*time.Second, func() bool { return fresh(g+"/kept", "worker-2") }); err != nil {
		t.Fatalf("the restarted bridge never confirmed a group it watches; bridge:\n%s", second.out)
	}
	out, stderr, code := heraldRun(t, nil, "who", g+"/dropped", "--json", "--nats", natsURL)
	var r whoReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitStale || !r.Stale || !strings.Contains(r.StaleReason, "does not observe the group") {
		t.Fatalf("who of a group the restarted bridge no longer watches: exit %d, want %d, stale as not observed:\n%s%s", code, exitStale, out, stderr)
	}
}
