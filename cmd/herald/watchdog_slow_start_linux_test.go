package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestWatchdogSlowToStartDoesNotFireOnAHealthyRunner: the runner beats
// only once its watchdog says it watches, and waits up to
// watchdogReadyWait for that; a watchdog that took longer than its
// silence bound to get there (held here by SIGSTOP, as a starved machine
// would) counted the wait as the runner's silence, and fired at once on a
// runner that was fine, killing the command it had just let go.
func TestWatchdogSlowToStartDoesNotFireOnAHealthyRunner(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "2s", "--connect-timeout", "10s"}
	g := uniq(t)
	child, env, read := overlapMarks(t)
	b := start(t, env, append(zk, "run", "--election", g, "--id", "b", "--", "sh", "-c", child)...)
	bPid := b.cmd.Process.Pid
	stopped := make(chan int, 1)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		for {
			select {
			case <-quit:
				return
			default:
			}
			tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", bPid))
			for _, tk := range tasks {
				raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", bPid, tk.Name()))
				for _, f := range strings.Fields(string(raw)) {
					pid, _ := strconv.Atoi(f)
					cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
					if bytes.Contains(cmdline, []byte(watchdogArg)) {
						// Once it has set its signals aside (and started
						// its clock), before it says it watches.
						for !ignoresTERM(pid) {
							select {
							case <-quit:
								return
							default:
							}
						}
						_ = syscall.Kill(pid, syscall.SIGSTOP)
						stopped <- pid
						return
					}
				}
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	var wd int
	select {
	case wd = <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatalf("no watchdog seen:\n%s", b.out)
	}
	time.Sleep(1500 * time.Millisecond) // past the watchdog's silence bound (1 s)
	if strings.Contains(b.out.String(), "child started") {
		t.Skipf("the watchdog was stopped only after it said it watches:\n%s", b.out)
	}
	_ = syscall.Kill(wd, syscall.SIGCONT)
	if err := waitFor(20*time.Second, func() bool { return strings.Contains(read(), "start b") }); err != nil {
		t.Fatalf("b's command never started: %q\n%s", read(), b.out)
	}
	time.Sleep(1500 * time.Millisecond)
	if out := b.out.String(); strings.Contains(out, "gave no sign of life") || strings.Contains(out, "watchdog died") {
		t.Fatalf("the watchdog, slow to start, fired on a healthy runner:\n%s", out)
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
