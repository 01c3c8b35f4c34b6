package elect_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestTooBigIsNotToldOfAWriteThatLanded: a fenced checkpoint of a big
// record (over 64 KiB) whose write costs the connection twice is taken for
// one the servers refuse as too big, and the writer is told ErrTooBig, "it
// was not saved", after a read of the checkpoint shows it is not there.
// Here the first write never reached the servers (swallowed, as a request
// over jute.maxbuffer is), and the second reached the leader, which could
// not commit it yet (three of its four followers cut off), before its
// connection went. The session moved to the follower still in touch, whose
// copy did not hold the write: the read there, without a sync, said it was
// not saved, and once the cut ended the write committed. The read-back now
// has the member catch up with the leader first (a sync, answered after the
// proposals before it), so it finds the write and the checkpoint is saved.
func TestTooBigIsNotToldOfAWriteThatLanded(t *testing.T) {
	ctx := ctxT(t, 120*time.Second)
	lw := startLandedWrite(t, ctx)
	data := bytes.Repeat([]byte("c"), 100<<10)
	got := make(chan error, 1)
	go func() { got <- lw.h.Fence().Checkpoint(ctx, lw.w, data) }()
	select {
	case <-lw.held:
	case err := <-got:
		t.Fatalf("the checkpoint ended (%v) before its second write reached the leader", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the second write never reached the leader")
	}
	// A request cut off right after it was forwarded may be dropped with
	// its connection, unread: wait until the leader proposed it.
	eventually(t, 20*time.Second, "the leader proposing the second write", func() bool {
		m, err := lw.leader.Mntr(ctx)
		n, _ := strconv.Atoi(m["zk_last_proposal_size"])
		return err == nil && n > len(data)
	})
	lw.toLeader.Refuse(true)
	lw.toOther.Refuse(false)
	lw.toLeader.Cut()
	// The read-back on the follower is answered from its copy at once; a
	// sync there waits for the commit, which the end of the cut allows.
	err := readBackOrSync(t, got, lw.toOther, lw.g)
	for _, f := range lw.cut {
		_ = lw.zkc.Isolate(f, false)
	}
	if err == errStillWaiting {
		err = <-got
	}
	// A write after the cut is committed after ours, if ours ever is: a
	// sync on the leader itself waits for no other session's proposal.
	if _, err := lw.direct.Conn().Create(lw.g+"-after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c, rerr := elect.ReadCheckpoint(ctx, lw.direct, lw.g)
	saved := rerr == nil && bytes.Equal(c.Data, data)
	if err != nil && saved && strings.Contains(err.Error(), "it was not saved") {
		t.Fatalf("told the checkpoint was not saved, but it was: %v", err)
	}
	if err != nil || !saved {
		t.Fatalf("checkpoint whose second write landed unanswered: %v; saved %v (%v)", err, saved, rerr)
	}
}

// landedWrite is a 5-member ensemble with three followers cut off, so
// that the leader cannot commit; an owner of group g on a session direct
// to the leader; and a writer session w on the leader through toLeader,
// which swallows w's first write and holds the reply to its second
// (released once it was forwarded), and fails over to the fourth
// follower through toOther.
type landedWrite struct {
	zkc               *zkserver.Cluster
	leader            *zkserver.Server
	cut               []int
	direct, w         *elect.Session
	g                 string
	h                 *elect.Handle
	toLeader, toOther *faultproxy.Proxy
	held              <-chan struct{}
}

func startLandedWrite(t *testing.T, ctx context.Context) *landedWrite {
	t.Helper()
	// A tick of a second gives the leader ten without a quorum (syncLimit)
	// before it gives up, ample for what follows on a loaded machine.
	zkc := zktest.ForTest(t, zkserver.Config{Nodes: 5, Isolatable: true, TickTime: time.Second, JVMHeap: "128m"})
	followers, err := zkc.Followers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leader, err := zkc.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lw := &landedWrite{zkc: zkc, leader: leader, cut: followers[:3], direct: session(t, []string{leader.Addr()}), g: groupPath(t)}
	el, err := elect.NewElection(lw.direct, lw.g, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	if lw.h, err = el.Campaign(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := lw.h.Checkpoint(ctx, []byte("before")); err != nil {
		t.Fatal(err)
	}
	lw.toLeader, lw.toOther = proxyTo(t, leader.Addr()), proxyTo(t, zkc.Member(followers[3]).Addr())
	lw.toOther.Refuse(true) // the writer starts on the leader
	lw.w = session(t, []string{lw.toLeader.Addr(), lw.toOther.Addr()}, elect.WithSessionTimeout(20*time.Second))
	lw.toLeader.DropRequestTo(faultproxy.OpMulti)
	lw.held = lw.toLeader.HoldReplyTo(faultproxy.OpMulti)
	isolate(t, zkc, lw.cut)
	return lw
}

var errStillWaiting = errors.New("still waiting")

// readBackOrSync waits for the checkpoint's result, or for a sync of the
// group at p, and says errStillWaiting for the latter.
func readBackOrSync(t *testing.T, got <-chan error, p *faultproxy.Proxy, g string) error {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case err := <-got:
			return err
		case <-deadline:
			t.Fatal("the checkpoint neither ended nor synced on the other member")
		case <-time.After(5 * time.Millisecond):
		}
		if p.Requests(faultproxy.OpSync, g) > 0 || p.Requests(faultproxy.OpSync, g+"/"+elect.CheckpointNode) > 0 {
			return errStillWaiting
		}
	}
}

// isolate cuts members off from the rest of zkc until the test ends.
func isolate(t *testing.T, zkc *zkserver.Cluster, members []int) {
	t.Helper()
	for _, m := range members {
		if err := zkc.Isolate(m, true); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, m := range members {
			_ = zkc.Isolate(m, false)
		}
	})
}
