package main

import (
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestReadyzAfterStallIsNotReadyFromStaleState: /readyz asked right after
// the bridge's process ran again from a stall (SIGSTOP, then SIGCONT),
// ZooKeeper not answering, says 503 and why: its session may have expired
// and its groups' owners changed while it was stopped. Before, it answered
// 200 from what it knew before the stall (session connected, every group
// live), while the live page already read the rows as stale. Once
// ZooKeeper answers again it is ready.
func TestReadyzAfterStallIsNotReadyFromStaleState(t *testing.T) {
	zk := zktest.Shared(t)
	p, err := faultproxy.New(zk.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	g := uniq(t)
	heldLock(t, zk.Addrs(), g)
	b, addr := pageBridge(t, p.Addr(), g, "30s")
	readyz := "http://" + addr + "/readyz"
	if err := waitFor(20*time.Second, func() bool { code, _ := getBody(t, readyz); return code == 200 }); err != nil {
		t.Fatal("the bridge never became ready")
	}
	if err := signalPID(b.cmd.Process.Pid, sigStop); err != nil {
		t.Fatal(err)
	}
	defer signalPID(b.cmd.Process.Pid, sigCont)
	p.Blackhole(true)                   // ZooKeeper does not answer the catch-up
	time.Sleep(2500 * time.Millisecond) // stopped long enough to count as a stall
	if err := signalPID(b.cmd.Process.Pid, sigCont); err != nil {
		t.Fatal(err)
	}
	code, body := getBody(t, readyz)
	if code != 503 || !strings.Contains(string(body), "stalled") {
		t.Errorf("/readyz right after a stall, ZooKeeper not answering: %d, want 503 saying it stalled:\n%s", code, body)
	}
	p.Blackhole(false)
	if err := waitFor(30*time.Second, func() bool { code, _ := getBody(t, readyz); return code == 200 }); err != nil {
		t.Error("/readyz never ready again once ZooKeeper answered")
	}
}
