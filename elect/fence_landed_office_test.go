package elect_test

import (
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
)

// TestFenceCheckpointLandedThenDeposedByAnAck: a put whose write landed,
// its reply lost, while the next term took office (its acknowledgment,
// as herald run writes before it starts its command) but wrote no
// checkpoint, finds its own record, byte for byte, once reconnected: it
// was saved, and nothing replaced it. It failed with ErrNotLeader (exit 3
// for herald checkpoint put) saying it "may have been saved and then
// replaced by the newer term's", the office's later term read before the
// checkpoint found was looked at.
func TestFenceCheckpointLandedThenDeposedByAnAck(t *testing.T) {
	pf := newProxiedPut(t)
	group, ctx, h, p, w := pf.group, pf.ctx, pf.h, pf.p, pf.w
	next := session(t, sharedAddrs(t))
	t.Cleanup(func() { p.Refuse(false) })
	p.Refuse(true) // once the reply is dropped, no new connection until the next term took office
	p.DropReplyTo(faultproxy.OpMulti)
	done := make(chan error, 1)
	go func() { done <- h.Fence().Checkpoint(ctx, w, []byte("old")) }()
	eventually(t, 10*time.Second, "the put's write sent, its reply dropped", func() bool { return p.Dropped() == 1 })

	if err := h.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	e2, _ := elect.NewElection(next, group)
	h2, err := e2.Campaign(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if err := h2.Acknowledge(ctx, "b took office"); err != nil {
		t.Fatal(err)
	}
	p.Refuse(false)
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the put did not end once reconnected")
	}
	c, rerr := elect.ReadCheckpoint(ctx, next, group)
	if rerr != nil || string(c.Data) != "old" {
		t.Fatalf("checkpoint %q (%v), want old: the test did not land the write", c.Data, rerr)
	}
	if err != nil {
		t.Fatalf("a put whose write landed, and which nothing replaced, failed: %v; want it saved", err)
	}
}
