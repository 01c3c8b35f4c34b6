package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGHUP (the terminal closed, the SSH connection dropped) and SIGQUIT
// stop lock and run as SIGTERM does: the command is told to stop, its exit
// status is passed through, and ownership is given back at once rather
// than left to a session timeout. Waiting in line, they exit 128+N.
func TestHolderStoppedByHangup(t *testing.T) {
	zk := zkFlags(t)
	for _, c := range []struct {
		sig        syscall.Signal
		verb, flag string
	}{{syscall.SIGHUP, "lock", "--lock"}, {syscall.SIGQUIT, "run", "--election"}} {
		g := uniq(t)
		p := start(t, nil, append(zk, c.verb, c.flag, g, "--grace", "5s", "--",
			"sh", "-c", `trap 'echo got TERM; exit 9' TERM; echo running; while :; do sleep 0.05; done`)...)
		p.waitOutput(t, "running", 20*time.Second)
		waiter := start(t, nil, append(zk, c.verb, c.flag, g, "--", "echo", "waiter-ran")...)
		waitQueued(t, zk, g, 2, "the waiter never queued")
		_ = waiter.cmd.Process.Signal(c.sig)
		if code := waiter.wait(t, 10*time.Second); code != 128+int(c.sig) || strings.Contains(waiter.out.String(), "waiter-ran") || !strings.Contains(waiter.out.String(), "interrupted") {
			t.Fatalf("%s waiting, sent %v: exit %d, want %d, nothing run, and why:\n%s", c.verb, c.sig, code, 128+int(c.sig), waiter.out)
		}
		_ = p.cmd.Process.Signal(c.sig)
		if code := p.wait(t, 10*time.Second); code != 9 || !strings.Contains(p.out.String(), "got TERM") {
			t.Fatalf("%s holding, sent %v: exit %d, want the child's 9 after its TERM trap:\n%s", c.verb, c.sig, code, p.out)
		}
		if out, _, code := heraldRun(t, nil, append(zk, "who", g)...); code != exitNoOwner {
			t.Fatalf("who right after %v stopped the holder: exit %d, want %d (released):\n%s", c.sig, code, exitNoOwner, out)
		}
	}
}
