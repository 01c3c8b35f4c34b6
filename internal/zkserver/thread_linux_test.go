package zkserver_test

import (
	"context"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestServerOutlivesTheThreadThatStartedIt: a server started from a
// goroutine locked to its thread, which then returns (and Go ends the
// thread), serves on. The kernel sends Pdeathsig when the thread that
// started a process ends; a cmd/herald test's ptrace tracer, a locked
// goroutine, ended the thread the shared server was started from, and
// the server died under the package's other tests (127 failures).
func TestServerOutlivesTheThreadThatStartedIt(t *testing.T) {
	c := zktest.ForTest(t, zkserver.Config{})
	s := c.Member(0)
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var err error
	onAThreadThatEnds(func() { err = s.Start(ctx) })
	if err != nil {
		t.Fatal(err)
	}
	// Give the thread's end, and a signal it would bring, time to land.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if !s.Running() {
			t.Fatal("the server died when the thread that started it ended")
		}
	}
	if out, err := s.FourLetter(ctx, "ruok"); err != nil || out != "imok" {
		t.Fatalf("ruok = %q, %v", out, err)
	}
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
