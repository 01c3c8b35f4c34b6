package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

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

	m := zkc.Member(0)
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(30*time.Second, func() bool { return strings.Contains(p.out.String(), "session presumed lost") }); err != nil {
		t.Fatalf("herald %s never said it presumed its session lost:\n%s", cmd, p.out)
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
	defer c.Close()
	if err := waitFor(15*time.Second, func() bool {
		there, _, err := c.Exists(l + "/" + node)
		return err == nil && !there
	}); err != nil {
		t.Fatalf("the lost session's node %s still there 15 s after ZooKeeper was back", node)
	}
	// herald gives the connection its timeout (6 s) from when it presumed
	// the session lost; the server restarts well within that.
	if took := time.Since(back); took > 4*time.Second {
		t.Errorf("the node of herald %s's lost session went %v after ZooKeeper was back: as late as the servers' own expiry (6s), not closed by herald", cmd, took.Round(time.Millisecond))
	} else {
		t.Logf("the node of herald %s's lost session went %v after ZooKeeper was back", cmd, took.Round(time.Millisecond))
	}
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("herald %s did not exit after its session was lost:\n%s", cmd, p.out)
	}
}
