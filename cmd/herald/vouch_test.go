//go:build unix

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestRunnerAfterALibraryOwner: a runner's node is deleted by hand while
// the runner is frozen (SIGSTOP), so its command, which ignores SIGTERM,
// runs on until the watchdog kills it; or while it hears, and its command
// runs on for the grace the runner gives it before SIGKILL. A client that does not run a
// command, and so does not wait for the one before it to stop (herald's
// library, go-zookeeper's zk.Lock), owns at once, then releases. The next
// runner must still wait for the frozen runner's command: a library's or a
// foreign client's release vouches for its own work only, not for the
// owners before it. Before, the next runner started at once on that
// release, beside the frozen runner's command. Whether the next runner
// queued behind the library owner or came after its release, it must wait.
func TestRunnerAfterALibraryOwner(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	cases := []struct {
		recipe, between string
		queuedBehind    bool // the next runner queues before the release
		hears           bool // the first runner is not frozen
	}{
		{"lock", "library", true, false},
		{"run", "library", true, false},
		{"lock", "library", false, false},
		{"run", "library", false, false},
		{"lock", "zk.Lock", true, false},
		{"run", "library", true, true},
	}
	for _, c := range cases {
		name := c.recipe + " " + c.between + map[bool]string{true: " queued behind", false: " after its release"}[c.queuedBehind]
		if c.hears {
			name += ", the first runner hearing"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each waits out a frozen runner's command
			addr := zktest.Shared(t).ConnectString()
			g := uniq(t)
			child, env, read := overlapMarks(t)
			run := markedCopies(t, c.recipe, g, env, child)
			first := run("copy-1", addr)
			if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") == 1 }); err != nil {
				t.Fatalf("copy-1's command never started: %q\n%s", read(), first.out)
			}
			release := queueBetween(t, c.recipe, c.between, g)
			var second *proc
			if c.queuedBehind {
				second = run("copy-2", addr)
				waitQueued(t, []string{"--zk", addr}, g, 3, "copy-2 never joined the queue")
			}
			if !c.hears {
				pid := first.cmd.Process.Pid
				if err := signalPID(pid, sigStop); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = signalPID(pid, sigCont) })
			}
			deleteLowest(t, g)
			release()
			if !c.queuedBehind {
				second = run("copy-2", addr)
			}
			if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
				t.Fatalf("copy-2's command never started: %q\n%s", read(), second.out)
			}
			if strings.Contains(read(), "OVERLAP") {
				t.Errorf("copy-2's command started while copy-1's still ran, after the %s owner's release:\n%s\n%s", c.between, read(), second.out)
			}
		})
	}
}

// queueBetween queues an owner that runs no command (herald's library, or
// go-zookeeper's zk.Lock) in group g behind its runner, and returns a func
// that waits until it owns, then releases.
func queueBetween(t *testing.T, recipe, who, g string) (release func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	owned := make(chan func() error, 1)
	fail := make(chan error, 1)
	switch {
	case who == "zk.Lock":
		l := zk.NewLock(zkSession(t).Conn(), g, zk.WorldACL(zk.PermAll))
		go func() {
			if err := l.Lock(); err != nil {
				fail <- err
				return
			}
			owned <- l.Unlock
		}()
	case recipe == "lock":
		l, err := elect.NewLock(zkSession(t), g)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			h, err := l.Acquire(ctx)
			if err != nil {
				fail <- err
				return
			}
			owned <- func() error { return h.Release(ctx) }
		}()
	default:
		e, err := elect.NewElection(zkSession(t), g)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			h, err := e.Campaign(ctx, "library")
			if err != nil {
				fail <- err
				return
			}
			owned <- func() error { return h.Resign(ctx) }
		}()
	}
	waitQueued(t, []string{"--zk", zktest.Shared(t).ConnectString()}, g, 2, "the "+who+" owner never joined the queue")
	return func() {
		t.Helper()
		select {
		case rel := <-owned:
			if err := rel(); err != nil {
				t.Fatalf("the %s owner's release: %v", who, err)
			}
		case err := <-fail:
			t.Fatalf("the %s owner: %v", who, err)
		case <-ctx.Done():
			t.Fatalf("the %s owner never owned once copy-1's node was deleted", who)
		}
	}
}
