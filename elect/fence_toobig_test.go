package elect_test

import (
	"bytes"
	"errors"
	"strings"
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

// TestHandleCheckpointOverTheServersLimitWithALongGroup: the refusal
// counted the record alone against jute.maxbuffer, with 4 KiB to spare,
// but the request also carries the paths of the owner's node, the
// checkpoint and the office, each the group's path and more. Under a group
// with a long path a record just within the bound made a request over it:
// the servers closed the owner's own connection and the ownership ended.
// The paths are now counted too.
func TestHandleCheckpointOverTheServersLimitWithALongGroup(t *testing.T) {
	ctx := ctxT(t, 60*time.Second)
	s := session(t, sharedAddrs(t), elect.WithSessionTimeout(4*time.Second))
	g := groupPath(t) + "/" + strings.Repeat("g", 3000)
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
	// 783,000 bytes are 1,044,000 in base64: a record some 400 bytes
	// under the old bound, a request some 8 KiB over the servers' limit.
	err = h.Checkpoint(ctx, bytes.Repeat([]byte("a"), 783000))
	if !errors.Is(err, elect.ErrTooBig) {
		t.Errorf("a checkpoint whose request is over the servers' jute.maxbuffer: %v, want ErrTooBig", err)
	}
	if !h.Held() {
		t.Fatalf("the owner lost its ownership to a checkpoint too big to send: %v", h.Reason())
	}
	if err := h.Checkpoint(ctx, []byte("next")); err != nil {
		t.Errorf("the owner's next checkpoint: %v", err)
	}
}

// TestFenceCheckpointThroughTheOwnersSessionOverTheServersLimit: only
// Handle.Checkpoint refused a record over the default jute.maxbuffer;
// the same record written with the handle's Fence through the owner's own
// session was sent, and the servers closed the owner's connection, which
// ended the ownership. Fence.Checkpoint refuses it too on that session.
func TestFenceCheckpointThroughTheOwnersSessionOverTheServersLimit(t *testing.T) {
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
		t.Fatal(err) // and the term is known
	}
	err = h.Fence().Checkpoint(ctx, s, bytes.Repeat([]byte("a"), 900<<10))
	if !errors.Is(err, elect.ErrTooBig) {
		t.Errorf("a fenced checkpoint over the servers' jute.maxbuffer through the owner's session: %v, want ErrTooBig", err)
	}
	if !h.Held() {
		t.Fatalf("the owner lost its ownership to a checkpoint too big to send: %v", h.Reason())
	}
}
