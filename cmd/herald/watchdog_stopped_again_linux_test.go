package main

import (
	"io"
	"log/slog"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestWatchdogStoppedAgainBetweenBeatsIsResumed: the watchdog is stopped,
// resumed (SIGCONT), runs, and is stopped again before the next beat
// looks. The next beat saw "stopped", took it for the same stop and never
// resumed it again (found by a review); every beat now sends SIGCONT to a
// stopped watchdog.
func TestWatchdogStoppedAgainBetweenBeatsIsResumed(t *testing.T) {
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	d := &watchdog{cmd: c, quit: make(chan struct{}), done: make(chan struct{}), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	stopped := func() bool { p, ok := readProc(c.Process.Pid); return ok && p.stopped }
	waitState := func(want bool) bool {
		for i := 0; i < 100; i++ {
			if stopped() == want {
				return true
			}
			time.Sleep(10 * time.Millisecond)
		}
		return false
	}
	if err := syscall.Kill(c.Process.Pid, syscall.SIGSTOP); err != nil || !waitState(true) {
		t.Fatalf("never stopped: %v", err)
	}
	d.resume() // beat 1: resumes
	if !waitState(false) {
		t.Fatal("beat 1 did not resume the watchdog")
	}
	// it runs; then kill -STOP of the group again, before the next beat
	if err := syscall.Kill(c.Process.Pid, syscall.SIGSTOP); err != nil || !waitState(true) {
		t.Fatalf("never stopped again: %v", err)
	}
	d.resume() // beat 2
	d.resume() // beat 3
	if !waitState(false) {
		t.Fatal("a watchdog stopped a second time (it ran in between) is never resumed: nothing stops the command should herald freeze")
	}
}
