package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// A checkpoint put whose fence reads the group to learn who owns (a node
// made by hand sorts below the leader's), and whose connection is lost on
// that read's sync and never comes back, says its own session ended, not
// the leader's, that nothing was saved and to put it again, exit 69. It
// said only "ZooKeeper unreachable: catching up with the ZooKeeper leader
// before reading" the group: not that it was a write, nor whether it saved.
func TestCheckpointPutCutOffOnItsSyncSaysNotSaved(t *testing.T) {
	owner := zkSession(t)
	g := uniq(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, err := elect.NewElection(owner, g, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	first, err := e.Campaign(ctx, "first") // so that the leader's node is not the group's first
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := e.Campaign(ctx, "leader")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Conn().Create(g+"/byhand-0000000000", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.New(zktest.Shared(t).Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	p.DropReplyTo(faultproxy.OpSync)
	go func() { // once the sync's reply is gone, refuse the reconnects
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
			if p.Dropped() == 1 {
				p.Refuse(true)
				return
			}
		}
	}()
	f := h.Fence()
	put := start(t, []string{"HERALD_PARENT="}, "--zk", p.Addr(), "--session-timeout", "2s", "checkpoint", "put",
		"--election", g, "--node", f.Node, "--term", strconv.FormatInt(f.Term, 10), "step=1")
	select {
	case <-put.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("checkpoint put still runs:\n%s", put.out)
	}
	out := put.out.String()
	if p.Dropped() != 1 {
		t.Fatalf("the proxy dropped %d sync replies, want 1: the test did not exercise the loss:\n%s", p.Dropped(), out)
	}
	for _, want := range []string{"not the leader's", "it was not saved", "put it again"} {
		if put.code != exitUnreachable || !strings.Contains(out, want) {
			t.Errorf("checkpoint put cut off on its sync: exit %d, want 69 saying %q:\n%s", put.code, want, out)
		}
	}
	if _, err := elect.ReadCheckpoint(ctx, owner, g); err == nil {
		t.Error("a checkpoint was saved")
	}
}

// A malformed fence given to checkpoint put is a usage error that says
// what a valid one is and where it comes from; it said only "bad fence"
// and what was wrong, leaving the user to guess a node name or a term.
func TestCheckpointPutBadFenceSaysWhatAValidOneIs(t *testing.T) {
	zkFl := zkFlags(t)
	for _, tc := range []struct {
		fence []string
		want  string
	}{
		{[]string{"--election", "/jobs/x", "--node", "leader", "--term", "5"}, "such as x-0000000007"},
		{[]string{"--election", "/jobs/x", "--node", "x-0000000007", "--term", "-5"}, "the czxid of the owner's node, > 0"},
		{[]string{"--election", "jobs/x", "--node", "x-0000000007", "--term", "5"}, "the owner's group"},
	} {
		args := append(append(append([]string{}, zkFl...), "checkpoint", "put"), tc.fence...)
		_, stderr, code := heraldRun(t, []string{"HERALD_PARENT="}, append(args, "step=1")...)
		for _, want := range []string{tc.want, "herald who PATH shows the owner's (its NODE and TERM)"} {
			if code != exitUsage || !strings.Contains(stderr, want) {
				t.Errorf("checkpoint put %v: exit %d, want %d saying %q:\n%s", tc.fence, code, exitUsage, want, stderr)
			}
		}
	}
}
