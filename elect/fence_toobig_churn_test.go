package elect_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// TestTooBigFirstCheckpointInAGroupWhoseQueueMoves: a group's first
// checkpoint, over the servers' jute.maxbuffer, written through a
// helper's session (herald checkpoint put's) while candidates join and
// leave the election. Each join and leave changes the group's pzxid,
// which told one absence of the checkpoint from another, so every lost
// write was taken for one that may have landed: the put was told the
// connection kept being lost and the checkpoint may have been saved
// (exit 69, try again), never ErrTooBig.
func TestTooBigFirstCheckpointInAGroupWhoseQueueMoves(t *testing.T) {
	ctx, s, g, h := leader(t)
	addrs := sharedAddrs(t)
	eventually(t, 20*time.Second, "the owner's term known", func() bool { return h.Term() > 0 })
	churn, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	defer func() { stop(); <-done }()
	go func() { defer close(done); candidatesComeAndGo(churn, session(t, addrs), g) }()
	w := session(t, addrs, elect.WithSessionTimeout(20*time.Second))
	err := h.Fence().Checkpoint(ctx, w, bytes.Repeat([]byte("a"), 900<<10))
	if !errors.Is(err, elect.ErrTooBig) {
		t.Fatalf("a first checkpoint over the servers' jute.maxbuffer beside a moving queue: %v, want ErrTooBig", err)
	}
	if _, err := elect.ReadCheckpoint(ctx, s, g); !errors.Is(err, elect.ErrNoCheckpoint) {
		t.Errorf("read back after ErrTooBig: %v, want no checkpoint", err)
	}
}

// candidatesComeAndGo campaigns in g through s and resigns, over and over
// until ctx ends: a queue node made and deleted, as standby candidates
// that start and stop make them.
func candidatesComeAndGo(ctx context.Context, s *elect.Session, g string) {
	el, err := elect.NewElection(s, g)
	if err != nil {
		return
	}
	for ctx.Err() == nil {
		c, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		_, _ = el.Campaign(c, "b") // behind the owner: waits until c ends, then leaves
		cancel()
	}
}
