package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/natsserver"
)

// TestHistoryHeldUntilLastConfirmedOnceItsBridgeDied: a bridge confirms
// worker-1 holding for some seconds and is killed. From NATS, from Kafka
// and from its audit log, history says "open, last confirmed <time>", and
// HELD FOR counts to that last confirmation, a lower bound: it read "≥ 0s"
// (--json held_for 0) once the bridge was dead, though it had read
// "≥ 2s" while the bridge lived.
func TestHistoryHeldUntilLastConfirmedOnceItsBridgeDied(t *testing.T) {
	zk := zkFlags(t)
	g := uniq(t)
	url := natsserver.Start(t).URL()
	kafka := strings.Join(kafkatest.Start(t).Addrs(), ",")
	campaign(t, zkSession(t), g, "worker-1")
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	b := start(t, nil, append([]string{"bridge", "--watch", g, "--nats", url, "--kafka", kafka, "--audit", auditLog, "--heartbeat", "200ms", "--source", "hb-1"}, zk...)...)
	sources := [][]string{{"--nats", url}, {"--kafka", kafka}, {"--audit", auditLog}}
	for _, src := range sources {
		var out string
		if err := waitFor(30*time.Second, func() bool {
			out, _, _ = heraldRun(t, nil, append([]string{"history", g}, src...)...)
			return strings.Contains(out, "worker-1") && strings.Contains(out, "holding")
		}); err != nil {
			t.Fatalf("history %v never showed worker-1 holding:\n%s\nbridge:\n%s", src, out, b.out)
		}
	}
	time.Sleep(2500 * time.Millisecond) // confirmed holding a while
	if err := signalPID(b.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	b.wait(t, 10*time.Second)
	for _, src := range sources {
		var out, stderr string
		if err := waitFor(20*time.Second, func() bool {
			out, stderr, _ = heraldRun(t, nil, append([]string{"history", g}, src...)...)
			return strings.Contains(out, "open, last confirmed ")
		}); err != nil {
			t.Fatalf("history %v never said worker-1 open, last confirmed, after its bridge died:\n%s%s", src, out, stderr)
		}
		if strings.Contains(out, "≥ 0s") {
			t.Errorf("history %v after its bridge died: held for ≥ 0s though confirmed for seconds:\n%s", src, out)
		}
		ts := historyJSON(t, append([]string{g}, src...)...)
		if len(ts) != 1 || !ts[0].Unconfirmed || ts[0].Confirmed.IsZero() || ts[0].HeldFor < 2*time.Second ||
			ts[0].HeldFor > ts[0].Confirmed.Sub(ts[0].From)+time.Millisecond {
			t.Errorf("history %v --json after its bridge died: %+v: want unconfirmed, held from its start to its last confirmation (≥ 2s)", src, ts)
		}
	}
}
