package main

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestKillLeftKillsWhatCarriesTheRunID: the releaser of a dead runner
// kills what is left of its command after the watchdog's SIGKILL, found by
// the command's HERALD_RUN_ID alone (a process in a session of its own,
// its parent gone), and spares a process carrying another id. Before, it
// only waited for such a process, then gave up and left the node to the
// session's expiry, with the process still running (found by review).
func TestKillLeftKillsWhatCarriesTheRunID(t *testing.T) {
	start := func(id string) *exec.Cmd {
		t.Helper()
		c := exec.Command("sleep", "30")
		c.Env = append(os.Environ(), runIDVar+"="+id)
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c
	}
	ours, other := start(newRunID()), start(newRunID())
	tag := runTag{id: ours.Env[len(ours.Env)-1][len(runIDVar)+1:]}
	if commandGone(1<<22, 0, nil, tag) {
		t.Fatal("commandGone: a live process carrying the run id is not counted")
	}
	left, _ := commandLeft(1<<22, 0, nil, tag)
	killLeft(left, 1<<22, tag)
	exited := make(chan error, 1)
	go func() { exited <- ours.Wait() }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the process carrying the run id was not killed")
	}
	if p, ok := readProc(other.Process.Pid); !ok || p.zombie {
		t.Error("a process carrying another run id was killed too")
	}
	if !commandGone(1<<22, 0, nil, tag) {
		t.Error("commandGone: the command is not gone once its last process was killed")
	}
}
