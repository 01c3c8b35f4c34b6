package main

import (
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestHABridgeRestartedWithAShorterTimeoutRuns: an HA bridge killed, then
// restarted at once with a shorter --session-timeout, finds its previous
// process's candidate of the same source in the election until the server
// expires that session, after the previous, longer timeout. It must wait
// for it and run: its election's check waited two of its own timeouts
// only, and stopped it as a duplicate of the dead process it replaced.
func TestHABridgeRestartedWithAShorterTimeoutRuns(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zks, url := zktest.Shared(t).ConnectString(), natsserver.Start(t).URL()
	g, ha, source := uniq(t), uniq(t)+"-ha", "shortened-"+newRunID()[:8]
	httpAddr := regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`)
	bridge := func(timeout string) (*proc, string) {
		p := start(t, nil, "bridge", "--zk", zks, "--session-timeout", timeout, "--connect-timeout", "10s",
			"--watch", g, "--ha", ha, "--source", source, "--nats", url, "--http", "127.0.0.1:0")
		return p, waitMatch(t, p, httpAddr, 30*time.Second)
	}
	old, addr := bridge("6s")
	waitRole(t, addr, "active")
	if err := signalPID(old.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	old.wait(t, 5*time.Second)
	restarted, addr := bridge("1s")
	waitRole(t, addr, "active") // once the server expired the previous session, 6 s on
	time.Sleep(2 * time.Second) // its checks end within two of its timeouts
	if restarted.exited() {
		t.Fatalf("the restarted bridge stopped after it led:\n%s", restarted.out)
	}
}
