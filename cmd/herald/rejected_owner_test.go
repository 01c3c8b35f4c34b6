package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/natsserver"
)

// TestOwnerChangeRefusedBySinkIsNotConfirmed: the NATS server refuses, for
// good, the event of an owner change (larger than its maximum payload:
// the next owner's id is long). The pipeline drops that event from the
// sink and the owners bucket keeps the owner before it, worker-1, who
// resigned. The bridge's heartbeats went on confirming that value: `who
// --nats` named worker-1, fresh, exit 0, and history showed worker-1
// holding, confirmed (found by an adversarial test). Now the group is not
// confirmed until the sink stores a later event of it: who says stale
// (exit 4) and history's open tenure is unconfirmed.
func TestOwnerChangeRefusedBySinkIsNotConfirmed(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	g := uniq(t)
	url := natsserver.Start(t, natsserver.WithMaxPayload(1100)).URL()
	first := campaign(t, zkSession(t), g, "worker-1")
	b := start(t, nil, append([]string{"bridge", "--watch", g, "--nats", url, "--heartbeat", "200ms", "--source", "refused-owner"}, zkFlags(t)...)...)
	var r whoReport
	if err := waitFor(30*time.Second, func() bool {
		out, _, code := heraldRun(t, nil, "who", g, "--json", "--nats", url)
		r = whoReport{}
		return code == 0 && json.Unmarshal([]byte(out), &r) == nil && r.Owner != nil && !r.Stale
	}); err != nil || r.Owner.ID != "worker-1" {
		t.Fatalf("who --nats never named worker-1 fresh (%+v):\n%s", r, b.out)
	}
	// Next in line, a client of the classic recipe whose node's data,
	// its id, is 256 bytes: the owner change naming it and worker-1 is
	// larger than the server takes.
	if _, err := rawZK(t).Create(g+"/n_", []byte(strings.Repeat("b", 256)), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // its joining is published
	if err := first.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(15*time.Second, func() bool {
		out, _, _ := heraldRun(t, nil, append([]string{"who", g}, zkFlags(t)...)...)
		return strings.Contains(out, "owner bbb")
	}); err != nil {
		t.Fatal("the client of the classic recipe never owned")
	}
	// Heartbeats come every 200ms: ten of them.
	time.Sleep(2 * time.Second)
	out, stderr, code := heraldRun(t, nil, "who", g, "--json", "--nats", url)
	r = whoReport{}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitStale || !r.Stale {
		t.Errorf("who --nats after the next owner's event was refused: exit %d (want %d), %v: want stale:\n%s%s\nbridge:\n%s", code, exitStale, err, out, stderr, b.out)
	}
	if !strings.Contains(stderr, "the sink refused its event") {
		t.Errorf("who --nats does not say the sink may have refused the group's event: it sent the reader to ZooKeeper alone:\n%s", stderr)
	}
	if !strings.Contains(b.out.String(), "the sink refused an event for good") {
		t.Errorf("the bridge did not log the refusal:\n%s", b.out)
	}
	ts := historyJSON(t, g, "--nats", url)
	if n := len(ts); n == 0 || ts[n-1].Open() && !ts[n-1].Unconfirmed {
		t.Errorf("history --nats after the next owner's event was refused: %+v: want its open tenure unconfirmed", ts)
	}
	// A client of the classic recipe with a one-byte id joins: its event,
	// naming it and the owner, is smaller than the first candidate's and
	// stored, and the owners bucket still names worker-1. That stored
	// candidate event made the group confirmed again, and who --nats
	// named worker-1, fresh (found by a review).
	if _, err := rawZK(t).Create(g+"/n_", []byte("c"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	out, stderr, code = heraldRun(t, nil, "who", g, "--json", "--nats", url)
	r = whoReport{}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitStale || !r.Stale {
		t.Errorf("who --nats after a candidate joined behind the refused owner change: exit %d (want %d), %v: want stale:\n%s%s\nbridge:\n%s", code, exitStale, err, out, stderr, b.out)
	}
}
