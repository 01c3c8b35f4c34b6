package main

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestHistoryGroupMovedToAnotherShardIsObserved (found by an adversarial
// test): the bridges of two shards are stopped and started again as three,
// each under its own --source as before (the README's way to change N). A
// group with one owner throughout moves from shard 1/2 (bridge b) to 0/3
// (bridge a). Bridge a's snapshot names the same owner node as b's event,
// and the stream kept b's alone (same event ID, within JetStream's
// duplicate window), while the owners bucket names a, which confirms it;
// a's sighting now has an id of its own and is stored. history judged only
// the stream's writers: b's heartbeats (shard 1/3) no
// longer cover the group, so it added "not observed: owners may be
// missing" after the owner's open row, growing with each of b's
// heartbeats, while the row above said holding and who said fresh.
func TestHistoryGroupMovedToAnotherShardIsObserved(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zkFlags(t)
	url := natsserver.Start(t).URL()
	root := uniq(t)
	var g string
	for i := 0; ; i++ {
		if g = fmt.Sprintf("%s/g%d", root, i); bridge.ShardOf(g, 2) == 1 && bridge.ShardOf(g, 3) == 0 {
			break
		}
	}
	heldLock(t, zktest.Shared(t).Addrs(), g)
	srcA, srcB := "moved-a", "moved-b"
	br := func(shard, src string) *proc {
		return start(t, nil, append([]string{"bridge", "--discover", root, "--shard", shard, "--source", src,
			"--heartbeat", "200ms", "--nats", url}, zk...)...)
	}
	confirmedBy := func(src string) {
		t.Helper()
		var out string
		if err := waitFor(30*time.Second, func() bool {
			out, _, _ = heraldRun(t, nil, "who", g, "--nats", url)
			return strings.Contains(out, "fresh: last confirmed by "+src+" ")
		}); err != nil {
			t.Fatalf("who never said %s confirms %s:\n%s", src, g, out)
		}
	}
	a, b := br("0/2", srcA), br("1/2", srcB)
	confirmedBy(srcB)
	for _, p := range []*proc{a, b} {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		p.wait(t, 20*time.Second)
	}
	br("0/3", srcA)
	br("1/3", srcB)
	confirmedBy(srcA)
	// a's sighting of the owner is in the stream (an id of its own, not
	// the change's b published), so the events name the bridge that
	// observes the group now, not only one whose shard left it.
	evs := streamIDs(t, url, g)
	if err := waitFor(10*time.Second, func() bool {
		return slices.ContainsFunc(evs.all(), func(e publish.Event) bool { return e.Source == srcA && e.Owner != nil })
	}); err != nil {
		t.Fatalf("the stream holds no event of %s from %s, whose snapshot named its owner: %+v", g, srcA, evs.all())
	}
	time.Sleep(time.Second) // b's heartbeats of shard 1/3 are stored
	ts := historyJSON(t, g, "--nats", url)
	if len(ts) == 0 || !ts[len(ts)-1].Open() || ts[len(ts)-1].Unconfirmed {
		t.Fatalf("history of %s: want the owner's open row last, confirmed: %+v", g, ts)
	}
	for _, r := range ts {
		if r.Missing {
			out, _, _ := heraldRun(t, nil, "history", g, "--nats", url)
			t.Fatalf("history of %s, observed by %s since the restart, its owner unchanged, marks a stretch not observed:\n%s", g, srcA, out)
		}
	}
}
