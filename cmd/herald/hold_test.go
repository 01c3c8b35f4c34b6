package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/faultproxy"
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

// leftover has a command's shell ignore SIGTERM and start a process that
// ignores it too, which writes its pid to $PIDFILE.
const leftover = `trap '' TERM; sh -c "trap '' TERM; exec sleep 600" & echo $! > "$PIDFILE"; `

// stray is leftover in a session of its own (setsid, as a daemon does):
// out of the command's process group, and once the command's shell exits,
// out of its tree.
const stray = `trap '' TERM; setsid sh -c "trap '' TERM; exec sleep 600" & echo $! > "$PIDFILE"; `

// leftovers are the two kinds of process a command may leave.
var leftovers = []struct{ name, sh string }{{"in its group", leftover}, {"setsid", stray}}

// checkLeftover, run as the next owner's command, says whether the
// process $PIDFILE names still runs (a zombie does not).
const checkLeftover = `p=$(cat "$PIDFILE"); s=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' /proc/$p/status 2>/dev/null)
	if [ -n "$s" ] && [ "$s" != Z ]; then echo "OVERLAP: $p still runs ($s)"; else echo "next owner: clean"; fi`

// pidFile gives a test's commands $PIDFILE, and kills what it names when
// the test ends.
func pidFile(t *testing.T) []string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "leftover.pid")
	t.Cleanup(func() {
		if b, err := os.ReadFile(f); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
				_ = signalPID(pid, syscall.SIGKILL)
			}
		}
	})
	return []string{"PIDFILE=" + f}
}

// A command that exits leaving processes in its process group, or in a
// session of their own (a daemon; ignoring SIGTERM, all of them), does not
// leave them running beside the next owner: lock and run stop them, and
// say so, before they release.
func TestHolderStopsWhatTheCommandLeftBeforeReleasing(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zkFlags(t)
	for _, c := range []struct{ verb, flag string }{{"lock", "--lock"}, {"run", "--election"}} {
		for _, l := range leftovers {
			g := uniq(t)
			env := pidFile(t)
			gofile := filepath.Join(t.TempDir(), "go")
			holder := start(t, env, append(zk, c.verb, c.flag, g, "--grace", "1s", "--", "sh", "-c",
				`sleep 600 & `+l.sh+`echo holding; while [ ! -e "`+gofile+`" ]; do sleep 0.05; done; exit 0`)...)
			holder.waitOutput(t, "holding", 20*time.Second)
			next := start(t, env, append(zk, c.verb, c.flag, g, "--", "sh", "-c", checkLeftover)...)
			waitQueued(t, zk, g, 2, "the next owner never queued")
			if err := os.WriteFile(gofile, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if code := holder.wait(t, 20*time.Second); code != 0 {
				t.Fatalf("%s, %s: the holder exited %d, want its command's 0:\n%s", c.verb, l.name, code, holder.out)
			}
			if code := next.wait(t, 20*time.Second); code != 0 || !strings.Contains(next.out.String(), "next owner: clean") {
				t.Fatalf("%s, %s: what the command left ran on beside the next owner (exit %d):\n%s", c.verb, l.name, code, next.out)
			}
			if out := holder.out.String(); !strings.Contains(out, "leaving processes behind") || !strings.Contains(out, "(sleep)") {
				t.Fatalf("%s, %s: the holder does not say what it stopped:\n%s", c.verb, l.name, out)
			}
		}
	}
}

// A process the command left in its group that ends at its SIGTERM ends
// the wait: run and lock release then, not after --grace. The leftover,
// orphaned, is handed to the runner (the subreaper), and unless the
// runner reaps it, its zombie keeps the group alive until the SIGKILL.
func TestLeftoverThatEndsAtSIGTERMIsNotWaitedOnForGrace(t *testing.T) {
	zk := zkFlags(t)
	for _, c := range []struct{ verb, flag string }{{"lock", "--lock"}, {"run", "--election"}} {
		g := uniq(t)
		began := time.Now()
		p := start(t, nil, append(zk, c.verb, c.flag, g, "--grace", "60s", "--", "sh", "-c", "sleep 600 & exit 7")...)
		if code := p.wait(t, 90*time.Second); code != 7 {
			t.Fatalf("%s: exit %d, want the command's 7:\n%s", c.verb, code, p.out)
		}
		if took := time.Since(began); took > 40*time.Second {
			t.Fatalf("%s: took %v with --grace 60s for a leftover that ends at SIGTERM: it waited on the leftover's zombie\n%s", c.verb, took, p.out)
		}
		if out, _, code := heraldRun(t, nil, append(zk, "who", g)...); code != exitNoOwner {
			t.Fatalf("%s: who after the holder exited: %d, want %d (released):\n%s", c.verb, code, exitNoOwner, out)
		}
	}
}

// With --grace 10s (the default, longer than the 1s session), a command
// that ignores SIGTERM is killed before the next owner starts, whether its
// holder was killed outright (the watchdog stops it) or lost its
// connection (the holder stops it), and so is a process it started in a
// session of its own; the holder given --grace 10s warns at start that it
// cannot give the whole --grace then (given none, it does not warn: the
// flag's help says so).
func TestCommandKilledBeforeTheNextOwnerStarts(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zkFlags(t)
	for _, l := range leftovers {
		t.Run("kill -9, "+l.name, func(t *testing.T) {
			g := uniq(t)
			env := pidFile(t)
			holder := start(t, env, append(zk, "lock", "--lock", g, "--grace", "10s", "--", "sh", "-c", l.sh+"echo holding; wait")...)
			holder.waitOutput(t, "holding", 20*time.Second)
			// The warning is logged once the command has started, so it
			// may come just after the command's first output.
			holder.waitOutput(t, "--grace is longer than the session allows", 5*time.Second)
			next := start(t, env, append(zk, "lock", "--lock", g, "--", "sh", "-c", checkLeftover)...)
			waitQueued(t, zk, g, 2, "the next owner never queued")
			// The watchdog notes strays every strayLookEvery: one younger
			// than that when herald dies may be missed (README).
			time.Sleep(2 * strayLookEvery)
			if err := holder.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			if code := next.wait(t, 20*time.Second); code != 0 || !strings.Contains(next.out.String(), "next owner: clean") {
				t.Fatalf("the killed holder's command ran on beside the next owner (exit %d):\n%s\nholder:\n%s", code, next.out, holder.out)
			}
			if l.sh == stray && !strings.Contains(holder.out.String(), "what it started apart from it") {
				t.Fatalf("the watchdog does not name the stray it stopped:\n%s", holder.out)
			}
		})
		// The connection cut and back at once (a ZooKeeper member killed,
		// a rolling restart): the session lives on and the holder's node
		// could be deleted within milliseconds, while the command, told
		// to stop, has a sixth of the session timeout to die.
		t.Run("connection cut, "+l.name, func(t *testing.T) {
			g := uniq(t)
			env := pidFile(t)
			// Two ways to the server, as to two members: the client
			// moves to the other at once.
			var ways []string
			var proxies []*faultproxy.Proxy
			for range 2 {
				p := sharedZKProxy(t)
				ways, proxies = append(ways, p.Addr()), append(proxies, p)
			}
			viaProxy := []string{"--zk", strings.Join(ways, ","), "--session-timeout", "4s", "--connect-timeout", "10s"}
			holder := start(t, env, append(viaProxy, "lock", "--lock", g, "--", "sh", "-c", l.sh+"echo holding; wait")...)
			holder.waitOutput(t, "holding", 20*time.Second)
			if strings.Contains(holder.out.String(), "--grace is longer") {
				t.Fatalf("a warning about the default --grace, which its help explains:\n%s", holder.out)
			}
			next := start(t, env, append(zk, "lock", "--lock", g, "--", "sh", "-c", checkLeftover)...)
			waitQueued(t, zk, g, 2, "the next owner never queued")
			for _, p := range proxies {
				p.Cut()
			}
			if code := next.wait(t, 20*time.Second); code != 0 || !strings.Contains(next.out.String(), "next owner: clean") {
				t.Fatalf("the cut-off holder's command ran on beside the next owner (exit %d):\n%s\nholder:\n%s", code, next.out, holder.out)
			}
			if code := holder.wait(t, 20*time.Second); code != exitNotLeader {
				t.Fatalf("the cut-off holder exited %d, want %d:\n%s", code, exitNotLeader, holder.out)
			}
		})
		t.Run("connection lost, "+l.name, func(t *testing.T) {
			g := uniq(t)
			env := pidFile(t)
			p := sharedZKProxy(t)
			viaProxy := []string{"--zk", p.Addr(), "--session-timeout", "1s", "--connect-timeout", "10s"}
			holder := start(t, env, append(viaProxy, "run", "--election", g, "--", "sh", "-c", l.sh+"echo holding; wait")...)
			holder.waitOutput(t, "holding", 20*time.Second)
			next := start(t, env, append(zk, "run", "--election", g, "--", "sh", "-c", checkLeftover)...)
			waitQueued(t, zk, g, 2, "the next owner never queued")
			p.Blackhole(true)
			if code := next.wait(t, 20*time.Second); code != 0 || !strings.Contains(next.out.String(), "next owner: clean") {
				t.Fatalf("the cut-off holder's command ran on beside the next owner (exit %d):\n%s\nholder:\n%s", code, next.out, holder.out)
			}
		})
	}
}

// On a terminal, the command can read it: its process group is made the
// terminal's foreground group while it runs, so it is not stopped
// (SIGTTIN) at its first read, holding the lock forever; herald takes
// the terminal back after. Ctrl-Z, typed before the line, stops nothing in
// the command's group, the watchdog included. The terminal is a pty from
// script(1).
func TestLockCommandReadsTheTerminal(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("this test needs script(1) from util-linux for a terminal: %v", err)
	}
	zk := zkFlags(t)
	g := uniq(t)
	quoted := []string{"'" + heraldBin + "'"}
	for _, a := range append(zk, "lock", "--lock", g, "--", "sh", "-c", `echo prompt; read x; echo got=$x; ps -eo pgid=,stat=,comm= | awk -v g=$$ "\$1 == g { print \"member\", \$2, \$3 }"`) {
		quoted = append(quoted, "'"+a+"'")
	}
	cmd := exec.Command(script, "-qfec", strings.Join(quoted, " ")+`; echo "herald exited $?"; ps -o tpgid= -p $$ | sed 's/^ */shell-fg=/'; echo "shell=$(ps -o pgid= -p $$)"`, "/dev/null")
	out := &syncBuf{}
	cmd.Stdout, cmd.Stderr = out, out
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	if err := waitFor(20*time.Second, func() bool { return strings.Contains(out.String(), "prompt") }); err != nil {
		t.Fatalf("the command never prompted:\n%s", out)
	}
	if _, err := in.Write([]byte("\x1ahello\n")); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(10*time.Second, func() bool { return strings.Contains(out.String(), "shell=") }); err != nil {
		t.Fatalf("the command never read its line from the terminal, and herald still holds the lock:\n%s", out)
	}
	got := out.String()
	if !strings.Contains(got, "got=hello") || !strings.Contains(got, "herald exited 0") {
		t.Fatalf("the command did not read its line from the terminal:\n%s", got)
	}
	if !strings.Contains(got, "member ") || strings.Contains(got, "member T") {
		t.Fatalf("Ctrl-Z stopped a process in the command's group:\n%s", got)
	}
	// The shell that ran herald has its terminal back.
	m := regexp.MustCompile(`shell-fg=(\d+)\s+shell=\s*(\d+)`).FindStringSubmatch(got)
	if m == nil || m[1] != m[2] {
		t.Fatalf("herald did not give the terminal back to the shell that ran it:\n%s", got)
	}
}

// A holder cut off from ZooKeeper stops its command and gives up; when it
// then exits it waits for the connection to come back, so that closing its
// session deletes its node at once rather than leaving the lock to a
// process that is gone until the server expires the session.
func TestCutOffHolderLeavesNoNodeBehind(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	g := uniq(t)
	p := sharedZKProxy(t)
	const timeout = 15 * time.Second
	viaProxy := []string{"--zk", p.Addr(), "--session-timeout", timeout.String(), "--connect-timeout", "10s"}
	// The cut comes once the command runs: "node=" alone matched the log
	// line of the lock's acquisition, and a cut made before the command
	// started (the runner's last look unanswered) made a give-up, slower
	// than the test's bound, one run in five.
	holder := start(t, nil, append(viaProxy, "lock", "--lock", g, "--", "sh", "-c", "echo command-node=$HERALD_NODE; exec sleep 60")...)
	holder.waitOutput(t, "command-node=", 20*time.Second)
	node := strings.Fields(strings.SplitN(holder.out.String(), "command-node=", 2)[1])[0]
	cut := time.Now()
	p.Blackhole(true)
	holder.waitOutput(t, "lost the lock", timeout)
	time.Sleep(300 * time.Millisecond)
	p.Blackhole(false)
	back := time.Now()
	c := rawZK(t)
	for {
		ok, _, err := c.Exists(g + "/" + node)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if time.Since(back) > time.Second {
			t.Fatalf("the cut-off holder's node %s is still there %v after the connection came back (%v after the cut; the session would expire %v after it):\n%s",
				node, time.Since(back).Round(time.Millisecond), time.Since(cut).Round(time.Millisecond), timeout, holder.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := holder.wait(t, 10*time.Second); code != exitNotLeader {
		t.Errorf("cut-off holder exit %d, want %d:\n%s", code, exitNotLeader, holder.out)
	}
}
