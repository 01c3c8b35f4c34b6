package main

import (
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestWatchdogStoppedIsResumed: someone stops the owner's watchdog
// (kill -STOP of the command's process group, which holds it, then
// kill -CONT of the command alone), and later the runner freezes past its
// session. A stopped watchdog went unnoticed, so nothing stopped the
// frozen runner's command, which ran beside the next copy's for as long
// as the freeze lasted (8.5-11.3 s in an adversarial test). The runner now
// resumes it, and says so.
func TestWatchdogStoppedIsResumed(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	for _, recipe := range []string{"run", "lock"} {
		t.Run(recipe, func(t *testing.T) {
			t.Parallel() // waits on sessions and processes, not the CPU
			zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
			_, ps, read := queuedCopies(t, zk, runnerCase{recipe, "command"}, 2)
			first, second := ps[0], ps[1]
			dog := watchdogPID(t, first)
			if err := syscall.Kill(dog, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(dog, syscall.SIGCONT) })
			first.waitOutput(t, "the watchdog was stopped", 10*time.Second)
			if err := waitFor(5*time.Second, func() bool { p, ok := readProc(dog); return ok && !p.stopped }); err != nil {
				t.Fatalf("the watchdog %d is still stopped:\n%s", dog, first.out)
			}
			frozenThenNext(t, first, second, read, "had been stopped")
		})
	}
}
