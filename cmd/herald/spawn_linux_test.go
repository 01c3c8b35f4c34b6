package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCommandOutlivesTheThreadThatStartedIt: a command started from a
// goroutine locked to its thread, which then returns (and Go ends the
// thread), is not killed. Its Pdeathsig comes when the thread that
// started it ends, not herald: the command would die while herald still
// held its leadership.
func TestCommandOutlivesTheThreadThatStartedIt(t *testing.T) {
	var tid int
	var err error
	var cmd *exec.Cmd
	var gate *os.File
	onAThreadThatEnds(func() {
		tid = syscall.Gettid()
		cmd, gate, err = startIn("/bin/sh", []string{"sh", "-c", "exit 0"}, nil, "thread-test", nil, nil, nil, nil, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { gate.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// The signal is sent as the thread exits, before its tid is gone.
	task := fmt.Sprintf("/proc/self/task/%d", tid)
	if err := waitFor(20*time.Second, func() bool { _, err := os.Stat(task); return os.IsNotExist(err) }); err != nil {
		t.Fatalf("thread %d never ended", tid)
	}
	if why := killedBy(pid); why != "" {
		gate.Close()
		t.Fatalf("the held command (pid %d) was killed when the thread that started it ended: %s (%v)", pid, why, cmd.Wait())
	}
}

// killedBy says why pid counts as killed (a zombie, or SIGKILL queued to
// it), "" when it lives on. Nothing reaps it meanwhile: the test waits
// for it only when it ends.
func killedBy(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			if strings.HasPrefix(v, "Z") || strings.HasPrefix(v, "X") {
				return "state " + v
			}
		case "ShdPnd", "SigPnd":
			if m, _ := strconv.ParseUint(v, 16, 64); m&(1<<(syscall.SIGKILL-1)) != 0 {
				return k + " " + v + " holds SIGKILL"
			}
		}
	}
	return ""
}

// onAThreadThatEnds runs f in a goroutine locked to its thread, which Go
// ends when the goroutine returns; not on the main thread, which Go keeps
// (wedged) instead. A goroutine that finds itself there holds it while
// another goroutine, which cannot run there then, tries again.
func onAThreadThatEnds(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked off the main thread: that thread ends with the goroutine
		if syscall.Gettid() == syscall.Getpid() {
			onAThreadThatEnds(f)
			runtime.UnlockOSThread()
			return
		}
		f()
	}()
	<-done
}
