package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHistoryHeldUntilLastConfirmedOnceItsBridgeDied: a bridge confirms
// worker-1 holding for some seconds and is killed. From NATS, from Kafka
// and from its audit log, history says "open, last confirmed <time>", and
// HELD FOR counts to that last confirmation, a lower bound: it read "≥ 0s"
// (--json held_for 0) once the bridge was dead, though it had read
// "≥ 2s" while the bridge lived.
func TestHistoryHeldUntilLastConfirmedOnceItsBridgeDied(t *testing.T) {
	g, _, b, sources := confirmedOnThreeSources(t)
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
