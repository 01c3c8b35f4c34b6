package main

import (
	"context"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestRunnerLostSessionLeavesWithTheServersBack: a herald lock or run whose
// ZooKeeper was gone for longer than the session timeout stops its
// command and exits. The servers may not have expired its session (an
// ensemble without a quorum expires nothing; a server restarted, as here,
// gives every session it kept a whole timeout again), and its node then
// held the group for that timeout after ZooKeeper was back: herald closed
// the session cut off, ending the connection that would have closed it as
// soon as the servers answered. It now gives that connection its timeout
// to do so before it exits.
func TestRunnerLostSessionLeavesWithTheServersBack(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	for _, k := range []struct{ name, flag string }{{"lock", "--lock"}, {"run", "--election"}} {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel() // each has a ZooKeeper of its own
			lostSessionLeavesWithTheServersBack(t, k.name, k.flag)
		})
	}
}

// lostSessionLeavesWithTheServersBack is the test for herald cmd (lock or
// run), whose group flag names.
func lostSessionLeavesWithTheServersBack(t *testing.T, cmd, flag string) {
	zkc := zktest.ForTest(t, zkserver.Config{Nodes: 1})
	l := uniq(t)
	p := start(t, nil, "--zk", zkc.ConnectString(), "--session-timeout", "6s", cmd, flag, l, "--", "sleep", "1000")
	// Once its command runs: an owner that loses before then joins again.
	node := waitMatch(t, p, regexp.MustCompile(`msg="child started".* node=(\S+)`), 30*time.Second)

	back, c := serverBackAfterLoss(t, zkc, p, "herald "+cmd)
	goneSoon(t, c, l+"/"+node, back, "herald "+cmd+"'s lost session")
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("herald %s did not exit after its session was lost:\n%s", cmd, p.out)
	}
}

// TestLockWaiterLostSessionLeavesWithTheServersBack: the same for a herald
// lock waiting in line, which joins again with a new session once its
// old one is presumed lost. The old session's node, left to the servers'
// expiry, became the lowest once the holder's went, and held the lock for
// nobody for a whole timeout after ZooKeeper was back.
func TestLockWaiterLostSessionLeavesWithTheServersBack(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zkc := zktest.ForTest(t, zkserver.Config{Nodes: 1})
	l := uniq(t)
	_, held := heldLock(t, zkc.Addrs(), l)
	p := start(t, nil, "--zk", zkc.ConnectString(), "--session-timeout", "6s", "lock", "--lock", l, "--", "true")
	c, _, err := zk.Connect(zkc.Addrs(), 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	var waiter string
	if err := waitFor(30*time.Second, func() bool {
		kids, _, err := c.Children(l)
		for _, k := range kids {
			if err == nil && k != held.Node() && strings.Contains(k, "lock-") {
				waiter = k
			}
		}
		return waiter != ""
	}); err != nil {
		t.Fatalf("herald lock never queued behind %s:\n%s", held.Node(), p.out)
	}
	c.Close()
	back, c := serverBackAfterLoss(t, zkc, p, "herald lock")
	goneSoon(t, c, l+"/"+waiter, back, "the waiting herald lock's lost session")
}

// serverBackAfterLoss kills zkc's one server, waits until herald p (what)
// presumes its session lost, starts the server again, and returns when it
// was back and a connection to it.
func serverBackAfterLoss(t *testing.T, zkc *zkserver.Cluster, p *proc, what string) (time.Time, *zk.Conn) {
	t.Helper()
	m := zkc.Member(0)
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(30*time.Second, func() bool {
		return strings.Contains(p.out.String(), "ZooKeeper unreachable for a whole session timeout")
	}); err != nil {
		t.Fatalf("%s never said it presumed its session lost:\n%s", what, p.out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	c, _, err := zk.Connect(zkc.Addrs(), 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return back, c
}

// goneSoon fails t unless node, of whose (6 s sessions), went within 4 s
// of back, when the server was back: herald gives the lost session's
// connection its timeout from when it presumed the session lost, and the
// server restarts well within that; left to the server, the node stays
// the whole timeout.
func goneSoon(t *testing.T, c *zk.Conn, node string, back time.Time, whose string) {
	t.Helper()
	if err := waitFor(15*time.Second, func() bool {
		there, _, err := c.Exists(node)
		return err == nil && !there
	}); err != nil {
		t.Fatalf("the node %s of %s still there 15 s after ZooKeeper was back", node, whose)
	}
	if took := time.Since(back); took > 4*time.Second {
		t.Errorf("the node of %s went %v after ZooKeeper was back: as late as the servers' own expiry (6s), not closed by herald", whose, took.Round(time.Millisecond))
	} else {
		t.Logf("the node of %s went %v after ZooKeeper was back", whose, took.Round(time.Millisecond))
	}
}

// TestSignalEndsALostSessionsWait: the wait that gives a lost session's
// connection its timeout to reach ZooKeeper ends on a signal. A herald
// lock or run waiting in line whose ZooKeeper is down took the whole
// timeout (8 s here) to exit after SIGINT, twice (found by a review).
func TestSignalEndsALostSessionsWait(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	for _, k := range []struct{ name, flag string }{{"lock", "--lock"}, {"run", "--election"}} {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel() // each has a ZooKeeper of its own
			zkc := zktest.ForTest(t, zkserver.Config{Nodes: 1})
			l := uniq(t)
			if k.name == "lock" {
				heldLock(t, zkc.Addrs(), l)
			} else {
				s, err := elect.NewSession(context.Background(), zkc.Addrs())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				e, err := elect.NewElection(s, l, elect.CreateParents())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := e.Campaign(context.Background(), "holder"); err != nil {
					t.Fatal(err)
				}
			}
			p := start(t, nil, "--zk", zkc.ConnectString(), "--session-timeout", "8s", k.name, k.flag, l, "--", "true")
			time.Sleep(2 * time.Second) // in line
			if err := zkc.Member(0).Kill(); err != nil {
				t.Fatal(err)
			}
			if err := waitFor(30*time.Second, func() bool {
				return strings.Contains(p.out.String(), "a signal ends the wait")
			}); err != nil {
				t.Fatalf("herald %s never waited for its lost session:\n%s", k.name, p.out)
			}
			sig := time.Now()
			_ = p.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-p.done:
			case <-time.After(20 * time.Second):
				t.Fatalf("herald %s still running 20 s after SIGINT:\n%s", k.name, p.out)
			}
			if took := time.Since(sig); took > 2*time.Second {
				t.Errorf("herald %s took %v to exit after SIGINT while its lost session's connection tried ZooKeeper", k.name, took.Round(time.Millisecond))
			}
		})
	}
}

// TestLockTimeoutEndsTheWaitForALostSession: a herald lock --timeout 10s
// waits in line when its ZooKeeper goes down; its 6 s session is presumed
// lost at about 7 s. Its wait for that session's connection to reach the
// servers (so that its node goes at once) used to take a whole session
// timeout more, ignoring --timeout: exit 75 after 13 s (found by a review).
func TestLockTimeoutEndsTheWaitForALostSession(t *testing.T) {
	t.Parallel() // a ZooKeeper of its own
	zkc := zktest.ForTest(t, zkserver.Config{Nodes: 1})
	l := uniq(t)
	heldLock(t, zkc.Addrs(), l)
	begin := time.Now()
	p := start(t, nil, "--zk", zkc.ConnectString(), "--session-timeout", "6s", "lock", "--lock", l, "--timeout", "10s", "--", "true")
	c, _, err := zk.Connect(zkc.Addrs(), 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	if err := waitFor(15*time.Second, func() bool { kids, _, _ := c.Children(l); return len(kids) >= 2 }); err != nil {
		t.Fatalf("herald lock never queued:\n%s", p.out)
	}
	c.Close()
	if err := zkc.Member(0).Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(40 * time.Second):
		t.Fatalf("herald lock --timeout 10s still running 40 s after it started:\n%s", p.out)
	}
	took := time.Since(begin)
	if p.code != 75 || took > 11500*time.Millisecond {
		t.Errorf("herald lock --timeout 10s exited %d after %v, want 75 by about 10 s:\n%s", p.code, took.Round(time.Millisecond), p.out)
	}
}
