package main

import (
	"strconv"
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
//
// The same holds for what the command left behind when it exited, which
// herald stops before it gives up ownership: there, signals went unheard
// too, and nothing was said until the --grace was over.
func TestSecondSignalKillsAtOnce(t *testing.T) {
	zk := zkFlags(t)
	for _, c := range []struct {
		name, script, stopping string
		code                   int
	}{
		{"command", `trap 'echo got TERM' TERM; echo running; while :; do sleep 0.05; done`, "got TERM", 128 + int(syscall.SIGKILL)},
		{"left behind", `(trap '' TERM; exec sleep 100) & echo "left=$!"; echo running; exit 0`, "stopping them", 0},
	} {
		g := uniq(t)
		p := start(t, nil, append(zk, "run", "--election", g, "--grace", "30s", "--", "sh", "-c", c.script)...)
		p.waitOutput(t, "running", 20*time.Second)
		if c.code == 0 {
			t.Cleanup(func() { _ = signalPID(mustAtoi(outMatch(t, p, `left=(\d+)`)), syscall.SIGKILL) })
		} else {
			_ = p.cmd.Process.Signal(syscall.SIGINT)
		}
		p.waitOutput(t, c.stopping, 5*time.Second)
		_ = p.cmd.Process.Signal(syscall.SIGINT)
		if c.code == 0 {
			time.Sleep(200 * time.Millisecond) // two pending SIGINTs are one
			_ = p.cmd.Process.Signal(syscall.SIGINT)
		}
		if code := p.wait(t, 5*time.Second); code != c.code || c.code != 0 && !strings.Contains(p.out.String(), "second signal: killing the command now") {
			t.Fatalf("%s: second SIGINT: exit %d, want %d:\n%s", c.name, code, c.code, p.out)
		}
		if out, _, code := heraldRun(t, nil, append(zk, "who", g)...); code != exitNoOwner {
			t.Fatalf("%s: who right after: exit %d, want %d (released):\n%s", c.name, code, exitNoOwner, out)
		}
	}
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestCtrlZDoesNotSuspendTheHolder: SIGTSTP (Ctrl-Z with the command's
// standard input not the terminal) does not suspend herald while it holds:
// it says why, and its command runs on. Before, herald stopped, its
// watchdog stopped the command half a session timeout later, and the
// session expired.
func TestCtrlZDoesNotSuspendTheHolder(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	g := uniq(t)
	p := start(t, nil, append(zkFlags(t), "run", "--election", g, "--", "sh", "-c", `echo "pid=$$"; while :; do sleep 0.05; done`)...)
	pid := mustAtoi(outMatch(t, p, `pid=(\d+)`))
	_ = p.cmd.Process.Signal(sigTSTP)
	p.waitOutput(t, "herald does not suspend", 5*time.Second)
	time.Sleep(1500 * time.Millisecond) // a 1 s session: the watchdog fires after 0.5 s
	if !running(pid) || strings.Contains(p.out.String(), "herald watchdog:") || p.exited() {
		t.Fatalf("after SIGTSTP to herald the command no longer runs:\n%s", p.out)
	}
}
