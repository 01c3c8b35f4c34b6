package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// deleteLowest deletes a group's lowest queue node by hand, as an operator
// deleting the owner's node with zkCli would.
func deleteLowest(t *testing.T, g string) {
	t.Helper()
	conn := rawZK(t)
	ch, _, err := conn.Children(g)
	if err != nil {
		t.Fatal(err)
	}
	var node string
	for _, c := range ch {
		if info, ok := elect.ParseName(c); ok && (node == "" || info.Sequence < mustSeq(node)) {
			node = c
		}
	}
	if node == "" {
		t.Fatalf("no queue node in %s: %v", g, ch)
	}
	if err := conn.Delete(g+"/"+node, -1); err != nil {
		t.Fatal(err)
	}
}

// TestOwnerStoppedWhileWaitingForThePreviousCommand: the leader's node is
// deleted by hand; the next copy, now owner, waits for the deposed
// command (which ignores SIGTERM) to be killed, and is told to stop
// meanwhile. It gives the leadership up without starting its command,
// and the third copy, finding that release on record, starts its own at
// once: the release must not come before the deposed command is dead.
// Before, it came at once, and the third copy's command ran beside the
// first's (found by TestChaosRunners, in the lock group).
func TestOwnerStoppedWhileWaitingForThePreviousCommand(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
	g := uniq(t)
	child, env, read := overlapMarks(t)
	run := func(id string) *proc {
		return start(t, env, append(zk, "run", "--election", g, "--id", id, "--grace", "10s", "--", "sh", "-c", child)...)
	}
	run("copy-1")
	if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") == 1 }); err != nil {
		t.Fatalf("no command started: %q", read())
	}
	second := run("copy-2")
	waitQueued(t, zk, g, 2, "copy-2 never joined the queue")
	run("copy-3")
	waitQueued(t, zk, g, 3, "copy-3 never joined the queue")
	deleteLowest(t, g)
	second.waitOutput(t, "waiting for its command to be stopped", 10*time.Second)
	_ = second.cmd.Process.Signal(syscall.SIGTERM)
	if code := second.wait(t, 10*time.Second); code != 128+int(syscall.SIGTERM) || !strings.Contains(second.out.String(), "interrupted before the command started") {
		t.Fatalf("copy-2, told to stop while it waited: exit %d, want %d before its command started:\n%s", code, 128+int(syscall.SIGTERM), second.out)
	}
	if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
		t.Fatalf("copy-3's command never started: %q", read())
	}
	if strings.Contains(read(), "OVERLAP") || strings.Contains(read(), "copy-2") {
		t.Errorf("copy-3's command started beside copy-1's, or copy-2's ran:\n%s", read())
	}
}

// TestOwnerCutOffWhileWaitingForThePreviousCommand: the leader's node is
// deleted by hand; the next copy, now owner, waits for the deposed
// command to be killed, and meanwhile loses touch with ZooKeeper while its
// own node is deleted by hand too. The third copy leads and, after its own
// wait, starts its command. The cut-off copy's wait ends as well, but
// nothing has told it that it no longer owns: it must not start its
// command before the servers confirm its node. Before, it started it at
// once, beside the third copy's, as a copy frozen (SIGSTOP) during its
// wait past its session timeout could when it ran again, before its
// client had heard of the expiry. Once it hears, it joins again at the
// queue's end, as a waiter whose node was deleted does.
func TestOwnerCutOffWhileWaitingForThePreviousCommand(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	addr := zktest.Shared(t).ConnectString()
	p := sharedZKProxy(t)
	g := uniq(t)
	child, env, read := overlapMarks(t)
	run := markedCopies(t, "run", g, env, child)
	run("copy-1", addr)
	if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") == 1 }); err != nil {
		t.Fatalf("no command started: %q", read())
	}
	zk := []string{"--zk", addr}
	second := run("copy-2", p.Addr())
	waitQueued(t, zk, g, 2, "copy-2 never joined the queue")
	run("copy-3", addr)
	waitQueued(t, zk, g, 3, "copy-3 never joined the queue")
	deleteLowest(t, g)
	second.waitOutput(t, "waiting for its command to be stopped", 10*time.Second)
	p.Blackhole(true)
	deleteLowest(t, g) // copy-2's node, which it does not hear of
	if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
		t.Fatalf("copy-3's command never started: %q", read())
	}
	p.Blackhole(false) // copy-2 hears now that its node is gone, and joins again behind copy-3
	second.waitOutput(t, "lost ownership before the command started", 20*time.Second)
	second.waitOutput(t, "joining again, at the queue's end", 5*time.Second)
	if strings.Contains(read(), "OVERLAP") || strings.Contains(read(), "copy-2") {
		t.Errorf("copy-2 started its command though it no longer owned:\n%s", read())
	}
}
