//go:build unix

package main

import (
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestWatchdogKilledIsStartedAgain: someone kills the owner's watchdog
// (kill -9) while the command, which ignores SIGTERM, runs; later the
// runner freezes (SIGSTOP) past its session. The runner did not notice
// the watchdog go, so nothing stopped the frozen runner's command, and the
// next copy's ran beside it (5.1 s in an adversarial test). The runner now
// starts a new watchdog, which stops the command before the session can
// expire.
func TestWatchdogKilledIsStartedAgain(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	for _, recipe := range []string{"run", "lock"} {
		t.Run(recipe, func(t *testing.T) {
			t.Parallel() // waits on sessions and processes, not the CPU
			zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
			first, second, read := ownerWithItsWatchdogKilled(t, zk, runnerCase{recipe, "command"})
			frozenThenNext(t, first, second, read, "was killed")
		})
	}
}

// frozenThenNext freezes copy-1's runner (SIGSTOP) past its session and
// waits for copy-2's command, which must not start while copy-1's runs;
// what says what happened to copy-1's watchdog before.
func frozenThenNext(t *testing.T, first, second *proc, read func() string, what string) {
	t.Helper()
	pid := first.cmd.Process.Pid
	if err := signalPID(pid, sigStop); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = signalPID(pid, sigCont) })
	if err := waitFor(30*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
		t.Fatalf("copy-2's command never started: %q\n%s", read(), second.out)
	}
	if strings.Contains(read(), "OVERLAP") {
		t.Errorf("copy-2 started its command while frozen copy-1's, whose watchdog %s, still ran:\n%s\n%s", what, read(), first.out)
	}
}

// TestRunnerKilledAfterItsWatchdog: someone kills the owner's watchdog
// (kill -9), then the runner itself, while its command's grandchild,
// which ignores SIGTERM, holds the flock. The kernel ends the runner's
// direct child only; before, nothing was left to stop the grandchild,
// which ran on beside the next copy's command for good (adversarial
// test). The watchdog the runner started again stops it, and releases
// the dead runner's node once it is gone.
func TestRunnerKilledAfterItsWatchdog(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	for _, recipe := range []string{"run", "lock"} {
		t.Run(recipe, func(t *testing.T) {
			t.Parallel() // waits on sessions and processes, not the CPU
			zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
			first, second, read := ownerWithItsWatchdogKilled(t, zk, runnerCase{recipe, "grandchild"})
			if err := first.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := waitFor(30*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
				t.Fatalf("copy-2's command never started: %q\n%s", read(), second.out)
			}
			if strings.Contains(read(), "OVERLAP") {
				t.Errorf("copy-2 started its command while dead copy-1's grandchild, its watchdog killed first, still held the flock:\n%s\n%s", read(), first.out)
			}
		})
	}
}

// ownerWithItsWatchdogKilled starts copy-1 and copy-2 of c, queued, kills
// copy-1's watchdog (kill -9), and checks that copy-1 says so and runs a
// new one; read gives the flock marks.
func ownerWithItsWatchdogKilled(t *testing.T, zk []string, c runnerCase) (first, second *proc, read func() string) {
	t.Helper()
	_, ps, read := queuedCopies(t, zk, c, 2)
	first, second = ps[0], ps[1]
	old := watchdogPID(t, first)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.waitOutput(t, "the watchdog died without stopping the command", 10*time.Second)
	if pid := watchdogPIDAfter(t, first, "started a new one"); pid == old || syscall.Kill(pid, 0) != nil {
		t.Fatalf("no new watchdog runs (old %d, new %d):\n%s", old, pid, first.out)
	}
	return first, second, read
}

// watchdogPID is the pid of p's watchdog, from its "child started" line.
func watchdogPID(t *testing.T, p *proc) int {
	t.Helper()
	return watchdogPIDAfter(t, p, "child started")
}

// watchdogPIDAfter is the watchdog pid in p's last line saying what.
func watchdogPIDAfter(t *testing.T, p *proc, what string) int {
	t.Helper()
	re := regexp.MustCompile(`watchdog=(\d+)`)
	var pid int
	for _, line := range strings.Split(p.out.String(), "\n") {
		if m := re.FindStringSubmatch(line); m != nil && strings.Contains(line, what) {
			pid, _ = strconv.Atoi(m[1])
		}
	}
	if pid <= 0 {
		t.Fatalf("no watchdog pid in a %q line:\n%s", what, p.out)
	}
	return pid
}

// TestWatchdogDyingAtOnceIsNotStartedAgainAndAgain: a watchdog started
// again that dies at once (killed as it starts, or unable to run) is not
// started again, which would repeat as fast as it dies: the runner warns
// and the command runs on, as when no watchdog could be started at all.
func TestWatchdogDyingAtOnceIsNotStartedAgainAndAgain(t *testing.T) {
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
	_, ps, _ := queuedCopies(t, zk, runnerCase{"lock", "command"}, 1)
	first := ps[0]
	if err := syscall.Kill(watchdogPID(t, first), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.waitOutput(t, "started a new one", 10*time.Second)
	if err := syscall.Kill(watchdogPIDAfter(t, first, "started a new one"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.waitOutput(t, "died within a second, so it is not started again", 10*time.Second)
	if n := strings.Count(first.out.String(), "started a new one"); n != 1 {
		t.Errorf("the watchdog was started again %d times, want once:\n%s", n, first.out)
	}
}
