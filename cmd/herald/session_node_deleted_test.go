package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestFrozenOwnersNodesDeletedBackToBack: the leader's runner is frozen
// (SIGSTOP) and its command ignores SIGTERM; an operator forcing over it
// deletes its queue node and then its session node, in two commands. The
// next copy, 20 ms from the servers, looks at its predecessor only once
// both are gone, and took that for the session's end (which deletes both
// in one transaction): it started its command at once, beside the frozen
// owner's, which runs until the watchdog kills it. The owner is not the
// group's first node, for whose predecessor the run notes are read too,
// and the next copy has waited behind it longer than the bound that
// vouches for the owners before it.
func TestFrozenOwnersNodesDeletedBackToBack(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	for _, recipe := range []string{"run", "lock"} {
		t.Run(recipe, func(t *testing.T) {
			t.Parallel()
			g := uniq(t)
			far, err := faultproxy.New(zktest.Shared(t).Addrs()[0])
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = far.Close() })
			far.Delay(20 * time.Millisecond)
			gone(t, g)
			child, env, read := overlapMarks(t)
			run := markedCopies(t, recipe, g, env, child)
			first := run("copy-1", zktest.Shared(t).ConnectString())
			if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") == 1 }); err != nil {
				t.Fatalf("no command started: %q", read())
			}
			owner, session := ownerAndSessionNode(t, g, recipe)
			second := run("copy-2", far.Addr())
			// Its watch on the owner's node goes once its look at the
			// owner's session node is answered.
			if err := waitFor(20*time.Second, func() bool { return far.Requests(faultproxy.OpGetData, owner) > 0 }); err != nil {
				t.Fatalf("copy-2 never watched the owner's node:\n%s", second.out)
			}
			// A standby waits long: longer than the bound that vouches
			// for owners before the one it waits behind (not an order of
			// events, a time the test must let pass).
			time.Sleep(predecessorBound(6*time.Second) + time.Second)
			if err := signalPID(first.cmd.Process.Pid, sigStop); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = signalPID(first.cmd.Process.Pid, sigCont) })
			conn := rawZK(t)
			for _, n := range []string{owner, session} {
				if err := conn.Delete(n, -1); err != nil {
					t.Fatal(err)
				}
			}
			if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
				t.Fatalf("copy-2's command never started: %q\n%s", read(), second.out)
			}
			if strings.Contains(read(), "OVERLAP") {
				t.Errorf("copy-2's command started while the frozen copy-1's still ran:\n%s\n%s", read(), second.out)
			}
			// It says why the two deletions proved no session's end.
			if !strings.Contains(second.out.String(), `session_end_unproven="the previous owner's`) {
				t.Errorf("copy-2 waited without saying why the session's end was unproven:\n%s", second.out)
			}
		})
	}
}

// gone makes group g with a node in it that went: the owner to come is
// then not the group's first.
func gone(t *testing.T, g string) {
	t.Helper()
	openTestRoot(t)
	conn := rawZK(t)
	if _, err := conn.Create(g, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	n, err := conn.Create(g+"/gone-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete(n, -1); err != nil {
		t.Fatal(err)
	}
}

// ownerAndSessionNode is the path of group g's only queue node and that
// of its session's session node (an election's in its office, a lock's
// under the default session root).
func ownerAndSessionNode(t *testing.T, g, recipe string) (owner, session string) {
	t.Helper()
	conn := rawZK(t)
	ch, _, err := conn.Children(g)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ch {
		if _, ok := elect.ParseName(c); ok {
			owner = g + "/" + c
		}
	}
	_, st, err := conn.Exists(owner)
	if owner == "" || err != nil {
		t.Fatalf("no queue node in %s (%v): %v", g, ch, err)
	}
	dir := map[string]string{"run": g + "/" + elect.OfficeNode, "lock": g + "-sessions"}[recipe] // see markedCopies
	session = fmt.Sprintf("%s/session-%016x-live", dir, uint64(st.EphemeralOwner))
	if ok, _, err := conn.Exists(session); err != nil || !ok {
		t.Fatalf("no session node %s: %v", session, err)
	}
	return owner, session
}
