package main

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// deleteAll deletes group g and everything in it, as zkCli's deleteall
// does, one node after another: the queue's last node first (a waiter's,
// whose wait then ends while the owner still holds), then the rest, then
// the group, again while a copy that joins again makes a node meanwhile.
func deleteAll(t *testing.T, c *zk.Conn, g string) {
	t.Helper()
	if err := deleteTree(c, g); err != nil {
		t.Fatal(err)
	}
}

// deleteTree deletes g and what is under it (two levels deep, as a group
// holds), its highest queue nodes first, as zkCli's deleteall would:
// nodes made meanwhile are deleted on the next try.
func deleteTree(c *zk.Conn, g string) error {
	for try := 0; try < 20; try++ {
		children, _, err := c.Children(g)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		slices.SortFunc(children, func(a, b string) int {
			x, _ := elect.ParseSequence(a)
			y, _ := elect.ParseSequence(b)
			return cmp.Compare(y, x)
		})
		for _, ch := range children {
			sub, _, _ := c.Children(g + "/" + ch)
			for _, s := range sub {
				_ = c.Delete(g+"/"+ch+"/"+s, -1)
			}
			_ = c.Delete(g+"/"+ch, -1)
		}
		if err := c.Delete(g, -1); err == nil || errors.Is(err, zk.ErrNoNode) {
			return nil
		}
	}
	return fmt.Errorf("could not delete %s: nodes kept coming", g)
}

// A deleteall of a group deposes its owner and deletes every waiter's
// node. A waiter that joins again finds the group made anew and its node
// the first, with nobody before it; but the owner it waited behind,
// deposed by the same hand, may still be stopping its command (one that
// ignores SIGTERM is killed a sixth of the session timeout later). The
// copy that joins again waits until that command is surely stopped, as it
// would after a delete of the owner's node alone. Before, its command
// started 20 ms after the deleteall, beside the old one.
func TestDeleteallWhileWaitingStartsNoCommandBesideTheDeposedOwner(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	for _, recipe := range []string{"lock", "run"} {
		t.Run(recipe, func(t *testing.T) {
			g := uniq(t)
			holder, next := deposedPair(t, recipe, g, "--", "sh", "-c", checkLeftover)
			deleteAll(t, rawZK(t), g)
			if code := next.wait(t, 30*time.Second); code != 0 || !strings.Contains(next.out.String(), "next owner: clean") {
				t.Fatalf("the copy that joined again ran its command beside the deposed owner's (exit %d):\n%s\nholder:\n%s", code, next.out, holder.out)
			}
			if !strings.Contains(next.out.String(), "may have deposed the owner we waited behind") {
				t.Fatalf("the copy that joined again did not say why it waited:\n%s", next.out)
			}
			if code := holder.wait(t, 20*time.Second); code != exitNotLeader {
				t.Fatalf("the deposed holder exited %d, want %d:\n%s", code, exitNotLeader, holder.out)
			}
		})
	}
}

// An owner whose node is deleted while it waits for the owner before it to
// stop, before its command started, joins again as a waiter whose node was
// deleted does, rather than exiting 3 with its command never run; its
// command starts once the owner before it is surely stopped.
func TestOwnerDeletedBeforeItsCommandStartedJoinsAgain(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	for _, recipe := range []string{"lock", "run"} {
		t.Run(recipe, func(t *testing.T) {
			g := uniq(t)
			holder, next := deposedPair(t, recipe, g, "--", "sh", "-c", checkLeftover)
			c := rawZK(t)
			if err := c.Delete(g+"/"+nodeOf(t, c, g, "holder"), -1); err != nil {
				t.Fatal(err)
			}
			next.waitOutput(t, "waiting for its command to be stopped", 10*time.Second)
			if err := c.Delete(g+"/"+nodeOf(t, c, g, "next"), -1); err != nil {
				t.Fatal(err)
			}
			next.waitOutput(t, "lost ownership before the command started", 10*time.Second)
			if code := next.wait(t, 30*time.Second); code != 0 || !strings.Contains(next.out.String(), "next owner: clean") {
				t.Fatalf("the copy deposed before its command started: exit %d, want 0 with its command run once the holder's stopped:\n%s", code, next.out)
			}
			holder.wait(t, 20*time.Second)
		})
	}
}

// lock's --timeout bounds the wait for the command to start, not only for
// the lock: a copy that takes the lock and then must wait for the owner
// before it to stop (frozen, its node deleted by hand) gives up when
// --timeout runs out, exits 75 and never starts its command.
func TestLockTimeoutBoundsTheStart(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	g := uniq(t)
	holder, next := deposedPair(t, "lock", g, "--timeout", "2s", "--", "echo", "next ran")
	begun := time.Now() // after next started: its --timeout runs from before
	c := rawZK(t)
	node := nodeOf(t, c, g, "holder")
	if holder.cmd.Process.Signal(sigStop) != nil {
		t.Fatal("could not freeze the holder")
	}
	if err := c.Delete(g+"/"+node, -1); err != nil {
		t.Fatal(err)
	}
	code := next.wait(t, 20*time.Second)
	if code != exitTempFail || strings.Contains(next.out.String(), "next ran") || !strings.Contains(next.out.String(), "--timeout ran out before the command could start") {
		t.Fatalf("exit %d after %v, want %d with the command never run:\n%s", code, time.Since(begun).Round(time.Millisecond), exitTempFail, next.out)
	}
	if took := time.Since(begun); took > 3500*time.Millisecond {
		t.Fatalf("gave up %v after queueing, with --timeout 2s", took.Round(time.Millisecond))
	}
	_ = holder.cmd.Process.Signal(sigCont)
	holder.wait(t, 20*time.Second)
}

// deposedPair starts, on a new group g of recipe (lock or run), with 4 s
// sessions, a holder ("holder") whose command leaves a process that
// ignores SIGTERM (its pid in $PIDFILE), and once it holds, a second copy
// ("next") with args (its flags, "--", its command), and waits for that
// one to queue.
func deposedPair(t *testing.T, recipe, g string, args ...string) (holder, next *proc) {
	t.Helper()
	zk, env := fourSecondSessions(t), pidFile(t)
	flag := map[string]string{"run": "--election", "lock": "--lock"}[recipe]
	holder = start(t, env, append(zk, recipe, flag, g, "--id", "holder", "--", "sh", "-c", leftover+"echo holding; wait")...)
	holder.waitOutput(t, "holding", 20*time.Second)
	next = start(t, env, append(append(zk, recipe, flag, g, "--id", "next"), args...)...)
	waitQueued(t, zkFlags(t), g, 2, "the next copy never queued")
	return holder, next
}

// fourSecondSessions is zkFlags with 4 s sessions: the wait for a
// deposed owner's command (predecessorBound) then takes under 4 s.
func fourSecondSessions(t *testing.T) []string {
	t.Helper()
	return []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "4s", "--connect-timeout", "10s"}
}

// nodeOf is the queue node in group g whose data is id.
func nodeOf(t *testing.T, c *zk.Conn, g, id string) string {
	t.Helper()
	var found string
	deadline := time.Now().Add(10 * time.Second)
	for found == "" && time.Now().Before(deadline) {
		children, _, err := c.Children(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range children {
			if b, _, err := c.Get(g + "/" + n); err == nil && strings.HasPrefix(string(b), id) {
				found = n
			}
		}
		if found == "" {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if found == "" {
		t.Fatalf("no node of %s in %s", id, g)
	}
	return found
}
