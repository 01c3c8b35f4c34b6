package elect_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// TestHandleCheckpointOverTheServersLimit: a checkpoint whose record is
// over the servers' jute.maxbuffer (1 MB, as the shared servers run) made
// ZooKeeper close the owner's own connection when Handle.Checkpoint sent
// it: the suspension ended the ownership, the node was released, and the
// write failed as "not leader ... belongs to someone else now" (found by
// an adversarial test). It is now refused before it is sent, with
// ErrTooBig: the owner still holds, its checkpoint saved before stays,
// and its next, smaller one is saved.
func TestHandleCheckpointOverTheServersLimit(t *testing.T) {
	ctx := ctxT(t, 60*time.Second)
	s := session(t, sharedAddrs(t), elect.WithSessionTimeout(4*time.Second))
	g := groupPath(t)
	el, err := elect.NewElection(s, g, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	h, err := el.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Checkpoint(ctx, []byte("small")); err != nil {
		t.Fatal(err)
	}
	err = h.Checkpoint(ctx, bytes.Repeat([]byte("a"), 900<<10))
	if !errors.Is(err, elect.ErrTooBig) {
		t.Fatalf("a checkpoint over the servers' jute.maxbuffer: %v, want ErrTooBig", err)
	}
	if !h.Held() {
		t.Fatalf("the owner lost its ownership to a checkpoint too big to send: %v", h.Reason())
	}
	reader := session(t, sharedAddrs(t))
	if c, err := elect.ReadCheckpoint(ctx, reader, g); err != nil || string(c.Data) != "small" {
		t.Errorf("checkpoint after the refused one: %q (%v), want small", c.Data, err)
	}
	if err := h.Checkpoint(ctx, []byte("next")); err != nil {
		t.Errorf("the owner's next checkpoint: %v", err)
	}
}
