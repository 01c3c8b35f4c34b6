package main

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestDeposedOwnerThatCannotHearStopsBeforeTheNextStarts: the leader's
// node is deleted by hand while its runner cannot hear of it: frozen
// (SIGSTOP), or cut off from the servers. Its command, which ignores
// SIGTERM, runs on until the watchdog (frozen) or the runner's own loss
// of the connection (cut off) kills it, up to five sixths of the session
// timeout after the deletion. The next copy must not start its command
// before then. Before, it waited a quarter of the timeout, and both
// commands ran (found by TestChaosRunners).
func TestDeposedOwnerThatCannotHearStopsBeforeTheNextStarts(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	for _, c := range lostCases {
		t.Run(c.recipe+" "+c.how, func(t *testing.T) {
			t.Parallel() // each waits out sessions and bounds: sleeps, not work
			g, second, read, lose := leaderAboutToBeLost(t, c.recipe, c.how)
			lose()
			deleteLowest(t, g)
			second.waitOutput(t, "waiting for its command to be stopped", 10*time.Second)
			if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
				t.Fatalf("copy-2's command never started: %q\n%s", read(), second.out)
			}
			if strings.Contains(read(), "OVERLAP") {
				t.Errorf("copy-2's command started while copy-1's (%s) still ran:\n%s", c.how, read())
			}
		})
	}
}

// lostCases are the recipes a runner holds and the ways it is lost in
// the tests of a runner that cannot hear.
var lostCases = []struct{ recipe, how string }{{"run", "frozen"}, {"run", "cut off"}, {"lock", "frozen"}, {"lock", "cut off"}}

// TestOwnerLostPastItsSessionHandsOverAtItsEnd: the leader's runner is
// frozen (SIGSTOP), or cut off from the servers, and stays so past its
// session, as when its machine dies. Its command, which ignores SIGTERM,
// is killed within five sixths of the session timeout (the watchdog, or
// the runner's own loss of the connection), before the session can
// expire. The next copy saw the leader's session node, and starts its
// command once that node goes with the session. Before, it waited 11/12
// of the timeout more, as for a node deleted by hand: 11.5 s after the
// loss with 6 s sessions. A lock's copies keep their session nodes under
// the session root; before they kept none, and waited so.
func TestOwnerLostPastItsSessionHandsOverAtItsEnd(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	const timeout = 6 * time.Second
	for _, c := range lostCases {
		t.Run(c.recipe+" "+c.how, func(t *testing.T) {
			t.Parallel()
			how := c.how
			_, second, read, lose := leaderAboutToBeLost(t, c.recipe, how)
			lost := time.Now()
			lose()
			if err := waitFor(30*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
				t.Fatalf("copy-2's command never started: %q\n%s", read(), second.out)
			}
			took := time.Since(lost)
			t.Logf("copy-2's command started %v after copy-1 was %s", took.Round(time.Millisecond), how)
			if strings.Contains(read(), "OVERLAP") {
				t.Errorf("copy-2's command started while copy-1's (%s) still ran:\n%s", how, read())
			}
			if limit := timeout + timeout*7/12; took > limit {
				t.Errorf("copy-2's command started %v after copy-1 was %s, want within %v (the session's end, not 11/12 of the timeout after it):\n%s", took.Round(time.Millisecond), how, limit, second.out)
			}
			second.waitOutput(t, "went with its session", 5*time.Second)
		})
	}
}

// TestDeposedOwnerSaysItsCommandStopped: the leader's node is deleted by
// hand and its runner hears of it. It kills its command (which ignores
// SIGTERM) a sixth of the session timeout later and records that it did:
// the next copy starts its own then, rather than wait out the bound
// herald keeps for a runner that cannot hear.
func TestDeposedOwnerSaysItsCommandStopped(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
	for _, c := range runnerCases {
		t.Run(c.recipe+" "+c.holder, func(t *testing.T) {
			t.Parallel()
			g, first, second, read := twoCopies(t, zk, c)
			deleteLowest(t, g)
			second.waitOutput(t, "recorded that its command stopped", 10*time.Second)
			if err := waitFor(10*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
				t.Fatalf("copy-2's command never started: %q\n%s", read(), second.out)
			}
			if strings.Contains(read(), "OVERLAP") {
				t.Errorf("copy-2's command started while copy-1's still ran:\n%s", read())
			}
			if code := first.wait(t, 10*time.Second); code != exitNotLeader {
				t.Errorf("copy-1: exit %d, want %d:\n%s", code, exitNotLeader, first.out)
			}
		})
	}
}

// TestDeadRunnersNodeIsReleasedOnceItsCommandIsGone: the owning runner is
// killed with SIGKILL while its command (which ignores SIGTERM) runs. Its
// watchdog kills the command and, once nothing of it is left, deletes the
// dead runner's node with the reason on record: the next copy starts its
// command then, without waiting for the dead session to expire and then
// for a runner that cannot hear. Before, it waited for both (11/12 of the
// timeout after the expiry), the flock never held by two commands either
// way.
func TestDeadRunnersNodeIsReleasedOnceItsCommandIsGone(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
	for _, c := range runnerCases {
		t.Run(c.recipe+" "+c.holder, func(t *testing.T) {
			t.Parallel()
			g, first, second, read := twoCopies(t, zk, c)
			if err := first.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
				t.Fatalf("copy-2's command never started: %q\n%s", read(), second.out)
			}
			if strings.Contains(read(), "OVERLAP") {
				t.Errorf("copy-2's command started while copy-1's still ran:\n%s", read())
			}
			if out := second.out.String(); strings.Contains(out, "without a release") || strings.Contains(out, "no owner was seen") {
				t.Errorf("copy-2 waited as for a node gone without a release:\n%s", out)
			}
			b, _, err := rawZK(t).Get(g)
			if err != nil {
				t.Fatal(err)
			}
			var mark struct {
				Released *elect.Release `json:"released"`
			}
			if json.Unmarshal(b, &mark) != nil || mark.Released == nil || mark.Released.Reason != elect.ReasonRunnerDied || mark.Released.ID != "copy-1" {
				t.Errorf("the group's mark %s: want copy-1's release, reason %q", b, elect.ReasonRunnerDied)
			}
			// The releaser deletes the dead runner's run note too, long
			// before its session (6 s) expires: a copy joining the group
			// after a deleteall would otherwise wait for that expiry.
			if err := waitFor(2*time.Second, func() bool { return len(runNotesOf(t, g)) == 1 }); err != nil {
				t.Errorf("run notes of the group once copy-2 ran: %q; want copy-2's alone", runNotesOf(t, g))
			}
		})
	}
}

// runNotesOf lists the run notes of group g under the default session
// root.
func runNotesOf(t *testing.T, g string) []string {
	t.Helper()
	names, _, err := rawZK(t).Children(elect.DefaultSessionRoot)
	if err != nil {
		t.Fatal(err)
	}
	h := fnv.New64a()
	h.Write([]byte(g))
	var notes []string
	for _, n := range names {
		if elect.IsRunNoteName(n) && strings.Contains(n, fmt.Sprintf("-%016x-", h.Sum64())) {
			notes = append(notes, n)
		}
	}
	return notes
}

// runnerCase is run or lock, whose command holds the flock itself or
// through a grandchild that ignores SIGTERM: the kernel kills the direct
// child with its runner, and the grandchild lives on until herald's (or
// the watchdog's) SIGKILL.
type runnerCase struct{ recipe, holder string }

var runnerCases = []runnerCase{{"run", "command"}, {"lock", "command"}, {"run", "grandchild"}, {"lock", "grandchild"}}

// twoCopies starts copy-1 of c in a group of its own and, once its
// command runs, copy-2 queued behind it; read gives the flock marks.
func twoCopies(t *testing.T, zk []string, c runnerCase) (g string, first, second *proc, read func() string) {
	t.Helper()
	g, ps, read := queuedCopies(t, zk, c, 2)
	return g, ps[0], ps[1], read
}

// queuedCopies starts copy-1 to copy-n of c in a group of its own: copy-1
// first, and each next one once its command runs or the one before
// queued; read gives the flock marks.
func queuedCopies(t *testing.T, zk []string, c runnerCase, n int) (g string, ps []*proc, read func() string) {
	t.Helper()
	g = uniq(t)
	run, read := copiesOf(t, zk, c, g)
	for i := 1; i <= n; i++ {
		ps = append(ps, run(fmt.Sprint("copy-", i)))
		if i > 1 {
			waitQueued(t, zk, g, i, fmt.Sprintf("copy-%d never joined the queue", i))
		} else if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") == 1 }); err != nil {
			t.Fatalf("no command started: %q", read())
		}
	}
	return g, ps, read
}

// copiesOf starts copies of c in group g, each with the id given, their
// commands marking the flock (see overlapMarks), which read gives.
func copiesOf(t *testing.T, zk []string, c runnerCase, g string) (run func(id string) *proc, read func() string) {
	child, env, read := overlapMarks(t)
	if c.holder == "grandchild" {
		child = strings.Replace(child, "exec sleep 60", "sleep 60 & wait", 1)
	}
	return func(id string) *proc {
		args := append([]string{}, zk...)
		if c.recipe == "run" {
			args = append(args, "run", "--election", g, "--id", id)
		} else {
			args = append(args, "lock", "--lock", g, "--id", id)
		}
		return start(t, env, append(args, "--grace", "10s", "--", "sh", "-c", child)...)
	}, read
}

// leaderAboutToBeLost starts copy-1 of a herald run or lock (recipe; 6 s
// sessions) through a fault proxy and, once its command runs, copy-2
// queued behind it; lose then freezes copy-1's runner (SIGSTOP) or cuts it
// off from the servers, as how says. read gives the flock marks.
func leaderAboutToBeLost(t *testing.T, recipe, how string) (g string, second *proc, read func() string, lose func()) {
	t.Helper()
	addr := zktest.Shared(t).ConnectString()
	p := sharedZKProxy(t)
	g = uniq(t)
	child, env, read := overlapMarks(t)
	run := markedCopies(t, recipe, g, env, child)
	first := run("copy-1", p.Addr())
	if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") == 1 }); err != nil {
		t.Fatalf("no command started: %q", read())
	}
	second = run("copy-2", addr)
	waitQueued(t, []string{"--zk", addr}, g, 2, "copy-2 never joined the queue")
	return g, second, read, func() {
		if how == "cut off" {
			p.Blackhole(true)
			return
		}
		pid := first.cmd.Process.Pid
		if err := signalPID(pid, sigStop); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = signalPID(pid, sigCont) })
	}
}

// sharedZKProxy is a fault proxy to the shared ZooKeeper, closed with the
// test.
func sharedZKProxy(t *testing.T) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(zktest.Shared(t).Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// markedCopies starts copies of a herald run or lock (recipe) in group g,
// 6 s sessions, through the servers given, each running child (see
// overlapMarks). Lock copies keep their session nodes in a root of the
// group's own: a session's end is proven only while nothing else changed
// under the root (see predecessorSessionEnded), and the shared root of
// the tests running beside them is never quiet.
func markedCopies(t *testing.T, recipe, g string, env []string, child string) func(id, servers string) *proc {
	flag := map[string]string{"run": "--election", "lock": "--lock"}[recipe]
	var root []string
	if recipe == "lock" {
		root = []string{"--session-root", g + "-sessions"}
	}
	return func(id, servers string) *proc {
		args := append([]string{"--zk", servers, "--session-timeout", "6s", recipe, flag, g, "--id", id, "--grace", "10s"}, root...)
		return start(t, env, append(args, "--", "sh", "-c", child)...)
	}
}

// TestRunnerFrozenWhileStoppingItsCommand: the owner's node is deleted,
// its runner hears of it and sends its command (which ignores SIGTERM)
// SIGTERM, and freezes before the SIGKILL. The watchdog kept watching
// only until the runner began to stop the command, so the command ran on
// until the runner thawed, beside the next owner's (found by
// TestChaosRunners). It now watches until the command is stopped, and
// kills it before the frozen runner's session can expire.
func TestRunnerFrozenWhileStoppingItsCommand(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
	for _, c := range []runnerCase{{"run", "command"}, {"lock", "command"}} {
		t.Run(c.recipe, func(t *testing.T) {
			t.Parallel()
			g, first, second, read := twoCopies(t, zk, c)
			deleteLowest(t, g)
			first.waitOutput(t, "stopping the child", 10*time.Second)
			pid := first.cmd.Process.Pid
			if err := signalPID(pid, sigStop); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = signalPID(pid, sigCont) })
			if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
				t.Fatalf("copy-2's command never started: %q\n%s", read(), second.out)
			}
			if strings.Contains(read(), "OVERLAP") {
				t.Errorf("copy-2's command started while frozen copy-1's still ran:\n%s", read())
			}
			_ = signalPID(pid, sigCont)
		})
	}
}

// TestBriefPredecessorsSessionEndVouchesOnlyForItself: copy-1 owns, its
// runner frozen, and its node is deleted by hand, so its command (which
// ignores SIGTERM) runs until the watchdog kills it. copy-2, next in line,
// now owns and waits for that; told twice to stop, it leaves at once,
// closing its session. copy-3 then finds its predecessor gone with its
// session, which proves copy-2's command stopped (it never started), not
// copy-1's. It started at once and ran beside copy-1's command (found by
// TestChaosRunners, where the brief owner was a killed waiter's node whose
// session expired). It now waits, from when it saw copy-2 lowest, as long
// as a runner that cannot hear may take to stop its command.
func TestBriefPredecessorsSessionEndVouchesOnlyForItself(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
	for _, c := range []runnerCase{{"run", "command"}, {"lock", "command"}} {
		t.Run(c.recipe, func(t *testing.T) {
			t.Parallel()
			g, ps, read := queuedCopies(t, zk, c, 3)
			first, second, third := ps[0], ps[1], ps[2]
			pid := first.cmd.Process.Pid
			if err := signalPID(pid, sigStop); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = signalPID(pid, sigCont) })
			deleteLowest(t, g)
			second.waitOutput(t, "waiting for its command to be stopped", 10*time.Second)
			_ = second.cmd.Process.Signal(syscall.SIGTERM)
			time.Sleep(50 * time.Millisecond)
			_ = second.cmd.Process.Signal(syscall.SIGTERM)
			if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
				t.Fatalf("copy-3's command never started: %q\n%s", read(), third.out)
			}
			if strings.Contains(read(), "OVERLAP") {
				t.Errorf("copy-3's command started while frozen copy-1's still ran:\n%s\ncopy-3:\n%s", read(), third.out)
			}
		})
	}
}

// TestShorterTimeoutWaitsForTheLongerOwner: copies given different
// --session-timeouts. The owner, given the longer, is frozen (SIGSTOP)
// and its node deleted by hand; its watchdog kills its command (which
// ignores SIGTERM) within 7/12 of that timeout of its last heartbeat. The
// next copy, given a quarter of it, used to wait the bound of its own
// timeout (11/12 of it) and start its command beside the old one. It now
// reads the owner's timeout on the owner's session node, and waits the
// bound of the longer.
func TestShorterTimeoutWaitsForTheLongerOwner(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	for _, recipe := range []string{"run", "lock"} {
		t.Run(recipe, func(t *testing.T) {
			t.Parallel()
			shorterTimeoutBehindFrozenOwner(t, recipe, true, nil)
		})
	}
}

// shorterTimeoutBehindFrozenOwner: copy-1, given 8 s sessions, owns and
// is frozen, and its node deleted by hand; copy-2, given 2 s, joined the
// queue before that (queued) or starts after it. copy-2's command must
// not run beside copy-1's, which ignores SIGTERM.
func shorterTimeoutBehindFrozenOwner(t *testing.T, recipe string, queued bool, frozen func(t *testing.T, g string)) {
	addr := zktest.Shared(t).ConnectString()
	g := uniq(t)
	child, env, read := overlapMarks(t)
	flag := map[string]string{"run": "--election", "lock": "--lock"}[recipe]
	copyWith := func(id, timeout string) *proc {
		return start(t, env, "--zk", addr, "--session-timeout", timeout, recipe, flag, g, "--id", id, "--grace", "10s", "--", "sh", "-c", child)
	}
	first := copyWith("copy-1", "8s")
	if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") == 1 }); err != nil {
		t.Fatalf("no command started: %q\n%s", read(), first.out)
	}
	var second *proc
	if queued {
		second = copyWith("copy-2", "2s")
		waitQueued(t, []string{"--zk", addr}, g, 2, "copy-2 never joined the queue")
	}
	pid := first.cmd.Process.Pid
	if err := signalPID(pid, sigStop); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = signalPID(pid, sigCont) })
	if frozen != nil {
		frozen(t, g)
	}
	deleteLowest(t, g)
	if !queued {
		second = copyWith("copy-2", "2s")
	}
	if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
		t.Fatalf("copy-2's command never started: %q\n%s", read(), second.out)
	}
	if strings.Contains(read(), "OVERLAP") {
		t.Errorf("copy-2 (2s sessions, queued before the deletion: %v) started its command while that of copy-1 (8s sessions, frozen) still ran:\n%s\n%s", queued, read(), second.out)
	}
}

// TestShorterTimeoutWaitsForAnOwnerGoneBeforeItJoined: as
// TestShorterTimeoutWaitsForTheLongerOwner, but the frozen owner's node
// is deleted before the copy given the shorter timeout starts, so that
// copy finds no node ahead of it to read a timeout from. It used to wait
// the bound of its own timeout and start its command beside the frozen
// owner's; it now reads the timeouts of every herald session that keeps
// a session node where its own is (the election's office, or the session
// root), the deposed owner's among them while its session lives.
func TestShorterTimeoutWaitsForAnOwnerGoneBeforeItJoined(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	for _, recipe := range []string{"run", "lock"} {
		t.Run(recipe, func(t *testing.T) {
			t.Parallel()
			shorterTimeoutBehindFrozenOwner(t, recipe, false, nil)
		})
	}
}

// TestShorterTimeoutWaitsForAnOwnerWhoseSessionNodeWasOverwritten: as
// TestShorterTimeoutWaitsForAnOwnerGoneBeforeItJoined, but the frozen
// owner's session node was overwritten by hand first (an operator's set,
// a restore), so that it tells no timeout, or deleted by hand (for run,
// with the whole office). The copy given the shorter timeout took its own
// for the bound, without a word, and started its command beside the
// frozen owner's (found by an adversarial test). It now reads the owner's
// timeout from its run note, which is there while its command may run.
func TestShorterTimeoutWaitsForAnOwnerWhoseSessionNodeWasOverwritten(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	for _, recipe := range []string{"run", "lock"} {
		for _, deleted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/deleted=%v", recipe, deleted), func(t *testing.T) {
				t.Parallel()
				shorterTimeoutBehindFrozenOwner(t, recipe, false, func(t *testing.T, g string) {
					spoilSessionNodes(t, g, recipe, deleted)
				})
			})
		}
	}
}

// spoilSessionNodes overwrites (or deletes) by hand the session node of
// every herald node in g; deleted, an election's office goes too.
func spoilSessionNodes(t *testing.T, g, recipe string, deleted bool) {
	t.Helper()
	conn := rawZK(t)
	ch, _, err := conn.Children(g)
	if err != nil {
		t.Fatal(err)
	}
	dir := g + "/" + elect.OfficeNode
	if recipe == "lock" {
		dir = elect.DefaultSessionRoot
	}
	for _, c := range ch {
		info, ok := elect.ParseName(c)
		if !ok || info.Session == 0 {
			continue
		}
		p := fmt.Sprintf("%s/session-%016x-live", dir, uint64(info.Session))
		if deleted {
			err = conn.Delete(p, -1)
		} else {
			_, err = conn.Set(p, []byte("restored by hand"), -1)
		}
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if deleted && recipe == "run" {
		if err := conn.Delete(dir, -1); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
	}
}
