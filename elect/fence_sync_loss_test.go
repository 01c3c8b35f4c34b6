package elect_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
)

// TestFenceCheckpointSyncCutOff: a fenced put whose ownership check reads
// the group (a node below the owner's, made by hand) and loses the
// connection on that read's sync reconnects and saves, as after any other
// connection loss. It failed at once, saying ZooKeeper was unreachable
// "before reading" the group, and neither that nothing was saved nor
// that it was a write.
func TestFenceCheckpointSyncCutOff(t *testing.T) {
	addrs := sharedAddrs(t)
	owner := session(t, addrs)
	ctx := ctxT(t, 60*time.Second)
	group := groupPath(t)
	e, _ := elect.NewElection(owner, group, elect.CreateParents())
	first, err := e.Campaign(ctx, "first")
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := e.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	// A node made by hand that sorts below the owner's has the fence
	// read the group (a sync first) to learn who owns.
	if _, err := owner.Conn().Create(group+"/byhand-0000000000", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	p := proxyTo(t, addrs[0])
	w := session(t, []string{p.Addr()})
	p.DropReplyTo(faultproxy.OpSync)
	err = h.Fence().Checkpoint(ctx, w, []byte("one"))
	if p.Dropped() != 1 {
		t.Fatalf("the proxy dropped %d sync replies, want 1: the test did not exercise the loss (put: %v)", p.Dropped(), err)
	}
	if err != nil {
		t.Fatalf("a checkpoint whose ownership check lost its sync's reply: %v; want it saved once reconnected", err)
	}
	if c, err := elect.ReadCheckpoint(ctx, owner, group); err != nil || string(c.Data) != "one" {
		t.Fatalf("checkpoint %+v (%v), want one", c, err)
	}
}

// TestHandleCheckpointOwnSessionEnded: an owner whose own session ends
// while its checkpoint's write goes unanswered is deposed, and its
// Checkpoint says so (ErrNotLeader), and that the write may have been
// saved; it said the session was lost, as of a helper's session, which
// says nothing of the owner.
func TestHandleCheckpointOwnSessionEnded(t *testing.T) {
	addrs := sharedAddrs(t)
	p := proxyTo(t, addrs[0])
	s := session(t, []string{p.Addr()}, elect.WithSessionTimeout(2*time.Second))
	watcher := session(t, addrs)
	ctx := ctxT(t, 60*time.Second)
	e, _ := elect.NewElection(s, groupPath(t), elect.CreateParents())
	h, err := e.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Refuse(false) })
	p.Refuse(true) // once the write's reply is dropped, no connection until the session is gone
	p.DropReplyTo(faultproxy.OpMulti)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		defer p.Refuse(false)
		for {
			if ok, _, err := watcher.Conn().Exists(h.NodePath()); err == nil && !ok && p.Dropped() == 1 {
				return // the session expired: its node went
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	err = h.Checkpoint(ctx, []byte("one"))
	close(stop)
	<-stopped
	if p.Dropped() != 1 {
		t.Fatalf("the proxy dropped %d replies, want 1: the test did not exercise the loss (%v)", p.Dropped(), err)
	}
	if !errors.Is(err, elect.ErrNotLeader) || !strings.Contains(err.Error(), "may or may not have been saved") {
		t.Fatalf("Checkpoint through an owner's session that ended meanwhile: %v; want ErrNotLeader, saying the write may have been saved", err)
	}
}
