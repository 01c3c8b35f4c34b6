package main

import (
	"strings"
	"testing"
	"time"
)

// TestReadyzAfterStallIsNotReadyFromStaleState: /readyz asked right after
// the bridge's process ran again from a stall (SIGSTOP, then SIGCONT),
// ZooKeeper not answering, says 503 and why: its session may have expired
// and its groups' owners changed while it was stopped. Before, it answered
// 200 from what it knew before the stall (session connected, every group
// live), while the live page already read the rows as stale. Once
// ZooKeeper answers again it is ready.
func TestReadyzAfterStallIsNotReadyFromStaleState(t *testing.T) {
	p, servers, g := proxiedZK(t)
	heldLock(t, servers, g)
	b, addr := pageBridge(t, p.Addr(), g, "30s")
	readyz := "http://" + addr + "/readyz"
	if err := waitFor(20*time.Second, func() bool { code, _ := getBody(t, readyz); return code == 200 }); err != nil {
		t.Fatal("the bridge never became ready")
	}
	stallBridge(t, b, p)
	code, body := getBody(t, readyz)
	if code != 503 || !strings.Contains(string(body), "stalled") {
		t.Errorf("/readyz right after a stall, ZooKeeper not answering: %d, want 503 saying it stalled:\n%s", code, body)
	}
	p.Blackhole(false)
	if err := waitFor(30*time.Second, func() bool { code, _ := getBody(t, readyz); return code == 200 }); err != nil {
		t.Error("/readyz never ready again once ZooKeeper answered")
	}
}
