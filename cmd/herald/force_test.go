package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSecondSignalKillsAtOnce: a command that traps SIGTERM and goes on
// gets the whole --grace after herald's first signal; a second (Ctrl-C
// again) kills it at once, and herald still gives the leadership back and
// says so. Before, the second signal went unheard: herald waited out the
// --grace, here 30s.
func TestSecondSignalKillsAtOnce(t *testing.T) {
	zk := zkFlags(t)
	g := uniq(t)
	p := start(t, nil, append(zk, "run", "--election", g, "--grace", "30s", "--",
		"sh", "-c", `trap 'echo got TERM' TERM; echo running; while :; do sleep 0.05; done`)...)
	p.waitOutput(t, "running", 20*time.Second)
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	p.waitOutput(t, "got TERM", 5*time.Second)
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t, 5*time.Second); code != 128+int(syscall.SIGKILL) || !strings.Contains(p.out.String(), "second signal: killing the command now") {
		t.Fatalf("second SIGINT: exit %d, want %d and why:\n%s", code, 128+int(syscall.SIGKILL), p.out)
	}
	if out, _, code := heraldRun(t, nil, append(zk, "who", g)...); code != exitNoOwner {
		t.Fatalf("who right after: exit %d, want %d (released):\n%s", code, exitNoOwner, out)
	}
}
