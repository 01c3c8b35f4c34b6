package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/natsserver"
)

// TestTailSaysWhenNoBridgeConfirms: a tail (--nats, --kafka) whose bridge
// is killed -9 says, within the heartbeats' bound, that no bridge confirms
// the group and changes may go unseen, and says so again when a bridge
// confirms it once more. Before, it showed nothing at all while its bridge
// was dead: silence that read as "nothing changed".
func TestTailSaysWhenNoBridgeConfirms(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zkFlags(t)
	url := natsserver.Start(t).URL()
	kafka := strings.Join(kafkatest.Start(t).Addrs(), ",")
	g := uniq(t)
	campaign(t, zkSession(t), g, "worker-1")
	bridge := func() *proc {
		return start(t, nil, append([]string{"bridge", "--watch", g, "--nats", url, "--kafka", kafka,
			"--heartbeat", "200ms", "--source", "bridge-t"}, zk...)...)
	}
	b := bridge()
	b.waitOutput(t, "bridge role", 20*time.Second) // the stream and topics exist
	tails := []*proc{start(t, nil, "tail", g, "--nats", url, "--since", "1m"), start(t, nil, "tail", g, "--kafka", kafka, "--since", "1m")}
	for _, tl := range tails {
		tl.waitOutput(t, "worker-1", 20*time.Second)
	}
	time.Sleep(staleBound) // the bridge confirms: no STALE line meanwhile
	for _, tl := range tails {
		if out := tl.out.String(); strings.Contains(out, "STALE") {
			t.Fatalf("tail %v says STALE while its bridge confirms:\n%s", tl.cmd.Args[1:], out)
		}
	}
	asJSON := start(t, nil, "tail", g, "--nats", url, "--since", "1m", "--json")
	asJSON.waitOutput(t, "worker-1", 20*time.Second)
	_ = signalPID(b.cmd.Process.Pid, syscall.SIGKILL)
	b.wait(t, 5*time.Second)
	// --json prints events only on standard output; it says so on stderr.
	asJSON.waitOutput(t, "level=WARN msg=\"no bridge confirms these groups now", 10*time.Second)
	for _, tl := range tails {
		tl.waitOutput(t, "STALE", 10*time.Second)
		if out := tl.out.String(); !strings.Contains(out, g+"  no bridge confirms") || !strings.Contains(out, "bridge-t") {
			t.Errorf("tail %v after the bridge was killed: want a STALE line naming the group and the bridge:\n%s", tl.cmd.Args[1:], out)
		}
	}
	bridge()
	for _, tl := range tails {
		tl.waitOutput(t, "CONFIRMED", 20*time.Second)
		if out := tl.out.String(); !strings.Contains(out, g+"  confirmed again by bridge-t") {
			t.Errorf("tail %v after the bridge came back: want a CONFIRMED line:\n%s", tl.cmd.Args[1:], out)
		}
	}
}
