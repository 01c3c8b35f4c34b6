package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/natsserver"
)

// TestHistorySaysUnconfirmedOnceItsBridgeStopped: from NATS and from
// Kafka, an owner the events leave holding is "holding" while its bridge
// confirms it; once that bridge has stopped (and nothing else confirms
// it), history says "open, last confirmed <time>" and --json
// "unconfirmed", as who says stale.
func TestHistorySaysUnconfirmedOnceItsBridgeStopped(t *testing.T) {
	zk := zkFlags(t)
	g := uniq(t)
	url := natsserver.Start(t).URL()
	kafka := strings.Join(kafkatest.Start(t).Addrs(), ",")
	campaign(t, zkSession(t), g, "worker-1")
	b := start(t, nil, append([]string{"bridge", "--watch", g, "--nats", url, "--kafka", kafka, "--heartbeat", "200ms", "--source", "hb-1", "--drain-timeout", "5s"}, zk...)...)
	sources := [][]string{{"--nats", url}, {"--kafka", kafka}}
	for _, src := range sources {
		var out string
		if err := waitFor(30*time.Second, func() bool {
			out, _, _ = heraldRun(t, nil, append([]string{"history", g}, src...)...)
			return strings.Contains(out, "worker-1") && strings.Contains(out, "holding")
		}); err != nil {
			t.Fatalf("history %v never showed worker-1 holding while its bridge confirms it:\n%s\nbridge:\n%s", src, out, b.out)
		}
	}
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := b.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("bridge exit %d after SIGTERM:\n%s", code, b.out)
	}
	for _, src := range sources {
		out, stderr, code := heraldRun(t, nil, append([]string{"history", g}, src...)...)
		if code != 0 || strings.Contains(out, "holding") || !strings.Contains(out, "open, last confirmed ") {
			t.Errorf("history %v after its bridge stopped: exit %d, want \"open, last confirmed\", not holding:\n%s%s", src, code, out, stderr)
		}
		ts := historyJSON(t, append([]string{g}, src...)...)
		if len(ts) != 1 || !ts[0].Open() || !ts[0].Unconfirmed || ts[0].Confirmed.IsZero() {
			t.Errorf("history %v --json after its bridge stopped: %+v: want open, unconfirmed, with its last confirmation", src, ts)
		}
	}
}
