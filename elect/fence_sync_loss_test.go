package elect_test

import (
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
