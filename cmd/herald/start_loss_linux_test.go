package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestCommandNotStartedAfterOwnershipEndsWhileAnnouncing (found by an
// adversarial test): a `run --nats` copy (b) becomes owner while its NATS server does
// not answer, so its announcement of the gain (announcer.gained, called
// after confirmOwned and before startCommand) waits out announceTimeout,
// 5 s. Its ownership ends meanwhile:
//
//   - deleted: its node is deleted by hand. The next copy (c) waits its
//     bound (11/12 of the timeout; no record of a stop comes) and starts
//     its command.
//   - frozen: b is frozen (SIGSTOP) for longer than its session. Its node
//     goes with its session, and c starts at once ("went with its
//     session").
//
// Then b's announcement gave up, and b started its command all the same,
// beside c's, and only then noticed the loss and stopped it: nothing
// looked at ownership between confirmOwned and the command's start. It
// now asks again once the watchdog watches, just before the command is
// let go, and never starts it. b's command ignores SIGTERM from its exec on (b was started with
// it ignored), so it lives until b's SIGKILL, a sixth of the timeout after
// it started, and finds c's command holding the flock (OVERLAP b). The
// test also fails on b's own "child started".
func TestCommandNotStartedAfterOwnershipEndsWhileAnnouncing(t *testing.T) {
	for _, tc := range []struct{ verb, flag, how string }{
		// Only run: herald lock connects to NATS once it holds the lock,
		// before confirmOwned, and announces nothing when that fails, so
		// this trigger does not reach it; it starts its command through
		// the same holdAndRun.
		{"run", "--election", "deleted"}, {"run", "--election", "frozen"},
	} {
		verb, flag, how := tc.verb, tc.flag, tc.how
		t.Run(verb+"/"+how, func(t *testing.T) {
			zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "2s", "--connect-timeout", "10s"}
			g := uniq(t)
			url := natsserver.Start(t).URL()
			px, err := faultproxy.New(strings.TrimPrefix(url, "nats://"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { px.Close() })
			_, env, read := overlapMarks(t)
			child := `trap "" TERM; exec 9>>"$MARKS.lock"; flock -n 9 || echo "OVERLAP $HERALD_ID" >> "$MARKS"; echo "start $HERALD_ID" >> "$MARKS"; exec sleep 60`
			nodes := func() []string { return queueNodes(t, g) }
			a := start(t, env, append(zk, verb, flag, g, "--id", "a", "--grace", "100ms", "--", "sh", "-c", child)...)
			if err := waitFor(20*time.Second, func() bool { return strings.Contains(read(), "start a") }); err != nil {
				t.Fatalf("a's command never started: %q", read())
			}
			// b is started with SIGTERM ignored, which its command inherits
			// from the moment it is executed: it stands for a command that
			// sets its handler up at once, and makes the overlap below
			// independent of how fast sh gets to its trap.
			b := startBin(t, "/bin/sh", env, append([]string{"-c", `trap "" TERM; exec "$HERALD_BIN" "$@"`, "sh"},
				append(zk, verb, flag, g, "--id", "b", "--nats", "nats://"+px.Addr(), "--", "sh", "-c", child)...)...)
			if err := waitFor(20*time.Second, func() bool { return len(nodes()) == 2 }); err != nil {
				t.Fatalf("want a and b queued: %v", nodes())
			}
			c := start(t, env, append(zk, verb, flag, g, "--id", "c", "--", "sh", "-c", child)...)
			if err := waitFor(20*time.Second, func() bool { return len(nodes()) == 3 }); err != nil {
				t.Fatalf("want a, b and c queued: %v", nodes())
			}
			time.Sleep(300 * time.Millisecond)
			px.Blackhole(true) // NATS stops answering b
			t0 := time.Now()
			_ = signalPID(a.cmd.Process.Pid, syscall.SIGTERM)
			if err := waitFor(20*time.Second, func() bool { return len(nodes()) == 2 }); err != nil {
				t.Fatalf("a never released: %v", nodes())
			}
			t.Logf("%v: a released; b owns", time.Since(t0).Round(time.Millisecond))
			b.waitOutput(t, `msg=elected`, 5*time.Second)
			time.Sleep(300 * time.Millisecond) // b is past confirmOwned, announcing
			switch how {
			case "deleted":
				bNode := nodes()[0]
				if err := rawZK(t).Delete(g+"/"+bNode, -1); err != nil {
					t.Fatal(err)
				}
				t.Logf("%v: deleted b's node %s by hand", time.Since(t0).Round(time.Millisecond), bNode)
			case "frozen":
				_ = signalPID(b.cmd.Process.Pid, syscall.SIGSTOP)
				t.Logf("%v: froze b", time.Since(t0).Round(time.Millisecond))
			}
			if err := waitFor(20*time.Second, func() bool { return strings.Contains(read(), "start c") }); err != nil {
				t.Fatalf("c's command never started: %q", read())
			}
			t.Logf("%v: c's command started", time.Since(t0).Round(time.Millisecond))
			if how == "frozen" {
				time.Sleep(200 * time.Millisecond)
				_ = signalPID(b.cmd.Process.Pid, syscall.SIGCONT)
				t.Logf("%v: thawed b", time.Since(t0).Round(time.Millisecond))
			}
			_ = waitFor(8*time.Second, func() bool { return strings.Contains(b.out.String(), "child started") })
			time.Sleep(500 * time.Millisecond)
			t.Logf("%v: marks %q", time.Since(t0).Round(time.Millisecond), read())
			if strings.Contains(read(), "OVERLAP") || strings.Contains(b.out.String(), "child started") {
				t.Errorf("b started its command after its ownership ended, while c's ran: marks %q\nb's output:\n%s\nc's output:\n%s", read(), b.out, c.out)
			}
		})
	}
}

// TestLossHeardWhileANewWatchdogStarts (found by an adversarial test): the owner's
// watchdog dies (kill -9 here; an out-of-memory killer on a machine short
// of memory), and the runner starts a new one (keepWatchdog), which is
// slow to say it watches: held here with SIGSTOP as it starts, as a
// machine thrashing, a debugger or a kill -STOP of the group would hold
// it. startWatchdog waited up to 10 s for it, inside superviseCommand's
// loop, which meanwhile heard nothing: neither the loss of ownership nor a
// signal. The owner's node is deleted by hand then; the next copy waits
// its bound (11/12 of 2 s) and starts its command, while the deposed one
// ran on until the wait for the new watchdog gave up. The wait now ends
// at a loss or a signal.
func TestLossHeardWhileANewWatchdogStarts(t *testing.T) {
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "2s", "--connect-timeout", "10s"}
	g := uniq(t)
	child, env, read := overlapMarks(t)
	nodes := func() []string { return queueNodes(t, g) }
	b := start(t, env, append(zk, "run", "--election", g, "--id", "b", "--", "sh", "-c", child)...)
	if err := waitFor(20*time.Second, func() bool { return strings.Contains(read(), "start b") }); err != nil {
		t.Fatalf("b's command never started: %q", read())
	}
	c := start(t, env, append(zk, "run", "--election", g, "--id", "c", "--", "sh", "-c", child)...)
	if err := waitFor(20*time.Second, func() bool { return len(nodes()) == 2 }); err != nil {
		t.Fatalf("want b and c queued: %v", nodes())
	}
	m := regexp.MustCompile(`msg="child started" pid=(\d+) watchdog=(\d+)`).FindStringSubmatch(b.out.String())
	if m == nil {
		t.Fatalf("no watchdog in b's log:\n%s", b.out)
	}
	cmdPid, _ := strconv.Atoi(m[1])
	oldWd, _ := strconv.Atoi(m[2])
	bPid := b.cmd.Process.Pid
	// Hold the new watchdog b starts as it starts: once it runs herald's
	// binary (before that, b's start of it waits for its exec, and a
	// hold there holds b; see the README), before it says it watches.
	stopped := make(chan int, 1)
	quit := make(chan struct{})
	defer close(quit)
	go holdWatchdog(bPid, []int{cmdPid, oldWd}, false, stopped, quit)
	t.Cleanup(func() {
		select {
		case pid := <-stopped:
			_ = syscall.Kill(pid, syscall.SIGCONT)
		default:
		}
	})
	t0 := time.Now()
	if err := syscall.Kill(oldWd, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var held int
	select {
	case held = <-stopped:
		stopped <- held // for the cleanup
	case <-time.After(5 * time.Second):
		t.Fatalf("b started no new watchdog:\n%s", b.out)
	}
	t.Logf("%v: killed b's watchdog %d; held its new one, %d, as it started", time.Since(t0).Round(time.Millisecond), oldWd, held)
	time.Sleep(200 * time.Millisecond)
	if err := rawZK(t).Delete(g+"/"+nodes()[0], -1); err != nil {
		t.Fatal(err)
	}
	t.Logf("%v: deleted b's node by hand", time.Since(t0).Round(time.Millisecond))
	if err := waitFor(20*time.Second, func() bool { return strings.Contains(read(), "start c") }); err != nil {
		t.Fatalf("c's command never started: %q\n%s", read(), c.out)
	}
	t.Logf("%v: c's command started; marks %q", time.Since(t0).Round(time.Millisecond), read())
	cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", held))
	t.Logf("the held new watchdog's command line: %q", strings.ReplaceAll(string(cl), "\x00", " "))
	if strings.Contains(read(), "OVERLAP") {
		_ = waitFor(12*time.Second, func() bool { return strings.Contains(b.out.String(), "lost leadership") })
		t.Logf("%v: b heard its loss: %v", time.Since(t0).Round(time.Millisecond), strings.Contains(b.out.String(), "lost leadership"))
		t.Errorf("c's command started while deposed b's still ran:\n%s\nb:\n%s\nc:\n%s", read(), b.out, c.out)
	}
}

// queueNodes is group g's queue nodes, lowest first (none when it cannot
// be listed).
func queueNodes(t *testing.T, g string) []string {
	ch, _, err := rawZK(t).Children(g)
	if err != nil {
		return nil
	}
	ch = slices.DeleteFunc(ch, func(c string) bool { _, ok := elect.ParseName(c); return !ok })
	slices.SortFunc(ch, func(x, y string) int { return int(mustSeq(x) - mustSeq(y)) })
	return ch
}

// TestCommandNotStartedOnACutOffMemberAfterItsNodeWent (found by an
// adversarial test): b's last look at its node before its command starts
// (confirmOwned) was a read, which a ZooKeeper follower answers from its
// own copy. b is connected to a follower that is cut off from the rest of
// the ensemble just after b became owner, while b announces its gain on a
// NATS that does not answer; its node is deleted on the rest of the
// ensemble meanwhile, and the announcement let go. The follower, which
// gives the leader up only syncLimit ticks after the cut (2.5 s), and the
// session's lease (half b's timeout after its last answered sync, 3 s
// here) both leave the look seconds to answer from the copy, which still
// holds b's node: b started its command after its node was gone. The
// look now syncs first, which the follower answers only once the leader
// has, and it never does.
func TestCommandNotStartedOnACutOffMemberAfterItsNodeWent(t *testing.T) {
	zkc, cut, other := cuttableEnsemble(t)
	on := func(i int) []string {
		return []string{"--zk", zkc.Member(i).Addr(), "--session-timeout", "6s", "--connect-timeout", "10s"}
	}
	g := uniq(t)
	url := natsserver.Start(t).URL()
	px, err := faultproxy.New(strings.TrimPrefix(url, "nats://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	_, env, read := overlapMarks(t)
	child := `echo "start $HERALD_ID" >> "$MARKS"; exec sleep 60`
	raw := zkConnTo(t, zkc.Member(other).Addr())
	nodes := func() []string {
		ch, _, err := raw.Children(g)
		if err != nil {
			return nil
		}
		ch = slices.DeleteFunc(ch, func(c string) bool { _, ok := elect.ParseName(c); return !ok })
		slices.SortFunc(ch, func(x, y string) int { return int(mustSeq(x) - mustSeq(y)) })
		return ch
	}
	a := start(t, env, append(on(other), "run", "--election", g, "--id", "a", "--grace", "100ms", "--", "sh", "-c", child)...)
	if err := waitFor(20*time.Second, func() bool { return strings.Contains(read(), "start a") }); err != nil {
		t.Fatalf("a's command never started: %q\n%s", read(), a.out)
	}
	b := start(t, env, append(on(cut), "run", "--election", g, "--id", "b", "--nats", "nats://"+px.Addr(), "--", "sh", "-c", child)...)
	if err := waitFor(20*time.Second, func() bool { return len(nodes()) == 2 }); err != nil {
		t.Fatalf("want a and b queued: %v\n%s", nodes(), b.out)
	}
	time.Sleep(300 * time.Millisecond)
	px.Blackhole(true) // NATS stops answering b, which announces its gain
	t0 := time.Now()
	_ = signalPID(a.cmd.Process.Pid, syscall.SIGTERM)
	b.waitOutput(t, `msg=elected`, 10*time.Second)
	time.Sleep(300 * time.Millisecond) // b is past its first look, announcing
	if err := zkc.Isolate(cut, true); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = zkc.Isolate(cut, false) }()
	t.Logf("%v: b owns; cut its member off", time.Since(t0).Round(time.Millisecond))
	ns := nodes()
	if len(ns) != 1 {
		t.Fatalf("want b's node alone: %v", ns)
	}
	if err := raw.Delete(g+"/"+ns[0], -1); err != nil {
		t.Fatal(err)
	}
	px.Blackhole(false) // b's announcement ends, and its command would start
	t.Logf("%v: deleted b's node %s on the rest of the ensemble; NATS answers again", time.Since(t0).Round(time.Millisecond), ns[0])
	_ = waitFor(30*time.Second, func() bool {
		out := b.out.String()
		return strings.Contains(out, "child started") || strings.Contains(out, "before the command started") || b.exited()
	})
	time.Sleep(300 * time.Millisecond)
	t.Logf("%v: marks %q", time.Since(t0).Round(time.Millisecond), read())
	if strings.Contains(read(), "start b") || strings.Contains(b.out.String(), "child started") {
		t.Errorf("b started its command after its node was deleted, confirmed by its cut-off member: marks %q\nb's output:\n%s", read(), b.out)
	}
	if !strings.Contains(b.out.String(), "before the command started") {
		t.Errorf("b does not say it lost ownership before its command started:\n%s", b.out)
	}
}
