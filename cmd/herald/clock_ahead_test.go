package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// TestHeartbeatFromAClockAheadIsNotFresh: a bridge whose clock ran ten
// minutes ahead confirmed worker-1 and died. The stream dates a heartbeat
// no later than the server stored it, but the bridges topic (its records
// carry the bridge's time) and the heartbeat beside an audit log have
// only the bridge's clock: who --kafka called worker-1 fresh, and history
// --kafka and --audit holding, for the ten minutes after, by the reader's
// clock. A heartbeat dated ahead of the reader's clock by more than its
// bound cannot say how long ago it was written: it confirms nothing.
func TestHeartbeatFromAClockAheadIsNotFresh(t *testing.T) {
	g := uniq(t)
	kc := kafkatest.Start(t)
	ks, err := kafkasink.New(kafkasink.Config{Brokers: kc.Addrs(), Partitions: 1, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ks.Close() })
	ahead := time.Now().Add(10 * time.Minute)
	gain := publish.Event{Type: publish.LeaderElected, Group: g, Recipe: elect.RecipeElection, Term: 10, Zxid: 10,
		Owner: &publish.Participant{ID: "worker-1", Node: "n_0000000001", Session: "0x1"}, Time: ahead, Source: "ahead-1"}.WithID()
	hb := publish.Heartbeat{Source: "ahead-1", State: publish.BridgeActive, Time: ahead, Confirmed: ahead, Interval: 100 * time.Millisecond}
	path := t.TempDir() + "/audit.log"
	as, err := audit.New(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = as.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, s := range []interface {
		publish.Sink
		WriteHeartbeat(context.Context, publish.Heartbeat) error
	}{ks, as} {
		write(t, s, gain)
		if err := s.WriteHeartbeat(ctx, hb); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(publish.MinStaleAfter + 500*time.Millisecond) // past its bound: the bridge died
	kafka := strings.Join(kc.Addrs(), ",")
	if out, stderr, code := heraldRun(t, nil, "who", g, "--kafka", kafka); code != exitStale || !strings.Contains(out, "ahead") {
		t.Errorf("who --kafka, the last heartbeat dated 10m ahead and none since: exit %d, want %d, stale, saying the heartbeat is dated ahead:\n%s%s", code, exitStale, out, stderr)
	}
	for _, src := range [][]string{{"--kafka", kafka}, {"--audit", path}} {
		if out, stderr, _ := heraldRun(t, nil, "history", g, src[0], src[1]); !strings.Contains(out, "worker-1") || strings.Contains(out, "holding") {
			t.Errorf("history %v, the last heartbeat dated 10m ahead and none since: want worker-1, not holding:\n%s%s", src, out, stderr)
		}
	}
}
