package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestWatchdogSlowToStartDoesNotFireOnAHealthyRunner: the runner waits up
// to watchdogReadyWait for its watchdog to say it watches, and used to
// beat only from then on; a watchdog that took longer than its silence
// bound to get there (held here by SIGSTOP, as a starved machine would)
// counted the wait as the runner's silence, and fired at once on a runner
// that was fine, killing the command it had just let go (found by a
// review). The runner now beats from the watchdog's start.
func TestWatchdogSlowToStartDoesNotFireOnAHealthyRunner(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	// The watchdog must be caught between setting its signals aside and
	// saying it watches, a window of a few milliseconds: a try that
	// misses it is made again, and the test fails should every try miss.
	for try := 1; try <= 5; try++ {
		if caught := slowWatchdogStart(t); caught {
			return
		}
		t.Logf("try %d: the watchdog said it watches before it was held", try)
	}
	t.Fatal("the watchdog was never held before it said it watches, in 5 tries")
}

// slowWatchdogStart starts a herald run whose watchdog is held (SIGSTOP)
// once it has set its signals aside, before it says it watches, for
// longer than its silence bound, and fails the test should the watchdog
// then fire on the runner. It reports whether the hold came in time.
func slowWatchdogStart(t *testing.T) bool {
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "2s", "--connect-timeout", "10s"}
	g := uniq(t)
	child, env, read := overlapMarks(t)
	b := start(t, env, append(zk, "run", "--election", g, "--id", "b", "--", "sh", "-c", child)...)
	bPid := b.cmd.Process.Pid
	stopped := make(chan int, 1)
	quit := make(chan struct{})
	defer close(quit)
	go holdWatchdog(bPid, nil, true, stopped, quit)
	var wd int
	select {
	case wd = <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatalf("no watchdog seen:\n%s", b.out)
	}
	time.Sleep(1500 * time.Millisecond) // past the watchdog's silence bound (1 s)
	if strings.Contains(b.out.String(), "child started") {
		_ = syscall.Kill(wd, syscall.SIGCONT)
		return false
	}
	_ = syscall.Kill(wd, syscall.SIGCONT)
	if err := waitFor(20*time.Second, func() bool { return strings.Contains(read(), "start b") }); err != nil {
		t.Fatalf("b's command never started: %q\n%s", read(), b.out)
	}
	time.Sleep(1500 * time.Millisecond)
	if out := b.out.String(); strings.Contains(out, "gave no sign of life") || strings.Contains(out, "watchdog died") {
		t.Fatalf("the watchdog, slow to start, fired on a healthy runner:\n%s", out)
	}
	return true
}

// holdWatchdog stops (SIGSTOP) the first watchdog herald pid starts that
// is not among skip, once it runs herald's binary (and, with ignoring,
// once it has set SIGTERM aside), and sends its pid on stopped.
func holdWatchdog(pid int, skip []int, ignoring bool, stopped chan<- int, quit <-chan struct{}) {
	for {
		select {
		case <-quit:
			return
		default:
		}
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, tk := range tasks {
			raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, tk.Name()))
			for _, f := range strings.Fields(string(raw)) {
				kid, _ := strconv.Atoi(f)
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", kid))
				if kid == 0 || slices.Contains(skip, kid) || !bytes.Contains(cmdline, []byte(watchdogArg)) {
					continue
				}
				for ignoring && !ignoresTERM(kid) {
					select {
					case <-quit:
						return
					default:
					}
				}
				_ = syscall.Kill(kid, syscall.SIGSTOP)
				stopped <- kid
				return
			}
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// ignoresTERM reports whether process pid ignores SIGTERM.
func ignoresTERM(pid int) bool {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "SigIgn:"); ok {
			mask, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return mask&(1<<(uint(syscall.SIGTERM)-1)) != 0
		}
	}
	return false
}
