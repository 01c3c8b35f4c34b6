package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/natsserver"
)

// TestHistorySaysUnconfirmedOnceItsBridgeStopped: from NATS, an owner the
// events leave holding is "holding" while its bridge confirms it; once
// that bridge has stopped (and nothing else confirms it), history says
// "open, last confirmed <time>" and --json "unconfirmed", as who says
// stale.
func TestHistorySaysUnconfirmedOnceItsBridgeStopped(t *testing.T) {
	zk := zkFlags(t)
	g := uniq(t)
	url := natsserver.Start(t).URL()
	campaign(t, zkSession(t), g, "worker-1")
	b := start(t, nil, append([]string{"bridge", "--watch", g, "--nats", url, "--heartbeat", "200ms", "--source", "hb-1", "--drain-timeout", "5s"}, zk...)...)
	var out string
	if err := waitFor(30*time.Second, func() bool {
		out, _, _ = heraldRun(t, nil, "history", g, "--nats", url)
		return strings.Contains(out, "worker-1") && strings.Contains(out, "holding")
	}); err != nil {
		t.Fatalf("history never showed worker-1 holding while its bridge confirms it:\n%s\nbridge:\n%s", out, b.out)
	}
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := b.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("bridge exit %d after SIGTERM:\n%s", code, b.out)
	}
	out, stderr, code := heraldRun(t, nil, "history", g, "--nats", url)
	if code != 0 || strings.Contains(out, "holding") || !strings.Contains(out, "open, last confirmed ") {
		t.Fatalf("history after its bridge stopped: exit %d, want \"open, last confirmed\", not holding:\n%s%s", code, out, stderr)
	}
	ts := historyJSON(t, g, "--nats", url)
	if len(ts) != 1 || !ts[0].Open() || !ts[0].Unconfirmed || ts[0].Confirmed.IsZero() {
		t.Fatalf("history --json after its bridge stopped: %+v: want open, unconfirmed, with its last confirmation", ts)
	}
}
