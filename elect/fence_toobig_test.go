package elect_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
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
	ctx, _, g, h := leader(t) // a session of 4 s, the tests' own
	if err := h.Checkpoint(ctx, []byte("small")); err != nil {
		t.Fatal(err)
	}
	err := h.Checkpoint(ctx, bytes.Repeat([]byte("a"), 900<<10))
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
	ctx, s, _, h := leader(t) // a session of 4 s, the tests' own
	if err := h.Checkpoint(ctx, []byte("small")); err != nil {
		t.Fatal(err) // and the term is known
	}
	err := h.Fence().Checkpoint(ctx, s, bytes.Repeat([]byte("a"), 900<<10))
	if !errors.Is(err, elect.ErrTooBig) {
		t.Errorf("a fenced checkpoint over the servers' jute.maxbuffer through the owner's session: %v, want ErrTooBig", err)
	}
	if !h.Held() {
		t.Fatalf("the owner lost its ownership to a checkpoint too big to send: %v", h.Reason())
	}
}

// TestTooBigIsNotToldOfAWriteThatLandedAndWasReplaced: a big record's
// first write landed, its reply lost with the connection; before the
// writer read it back, another write of the same leader replaced it, and
// the writer's next write was cut off unsent. Two writes lost and a read
// back that did not show the record were taken for the servers refusing
// it as too big: ErrTooBig, "it was not saved", though it was, and a
// write landed, so the servers took it. A write that landed since ours
// went unanswered (the checkpoint changed) now starts the count again,
// and the writer writes once more.
func TestTooBigIsNotToldOfAWriteThatLandedAndWasReplaced(t *testing.T) {
	ctx, s, g, h := leader(t)
	if err := h.Checkpoint(ctx, []byte("before")); err != nil {
		t.Fatal(err)
	}
	landedThenLost(t, ctx, s, g, h, func() {
		if err := h.Checkpoint(ctx, []byte("other")); err != nil {
			t.Fatal(err)
		}
	})
}

// TestTooBigIsNotToldOfAWriteThatLandedAndWasRemadeByHand: as
// TestTooBigIsNotToldOfAWriteThatLandedAndWasReplaced, but the checkpoint
// the big record's first write replaced was at version 0, and before the
// writer read it back someone deleted it by hand (as herald's own errors
// suggest, "delete it to start afresh") and the leader saved anew, at
// version 0 again. The version alone read as if the checkpoint had stayed
// as read, so the lost write that landed counted towards ErrTooBig, "it
// was not saved". A checkpoint changed since is now told by the zxid of
// its last write, which no later write shares.
func TestTooBigIsNotToldOfAWriteThatLandedAndWasRemadeByHand(t *testing.T) {
	ctx, s, g, h := leader(t)
	if err := h.Checkpoint(ctx, []byte("before")); err != nil {
		t.Fatal(err)
	}
	landedThenLost(t, ctx, s, g, h, func() {
		if err := s.Conn().Delete(g+"/"+elect.CheckpointNode, -1); err != nil {
			t.Fatal(err)
		}
		if err := h.Checkpoint(ctx, []byte("other")); err != nil {
			t.Fatal(err)
		}
	})
}

// TestTooBigIsNotToldOfAFirstWriteThatLandedAndWasDeletedByHand: the big
// record was the group's first checkpoint; its first write made the node,
// its reply lost with the connection, and before the writer read it back
// someone deleted the node by hand. No checkpoint before, none after: the
// read looked as if the checkpoint had stayed as read, so the landed write
// counted towards ErrTooBig, "it was not saved". With no checkpoint, a
// node made or deleted in the group since (its pzxid) says it changed.
func TestTooBigIsNotToldOfAFirstWriteThatLandedAndWasDeletedByHand(t *testing.T) {
	ctx, s, g, h := leader(t)
	landedThenLost(t, ctx, s, g, h, func() {
		if err := s.Conn().Delete(g+"/"+elect.CheckpointNode, -1); err != nil {
			t.Fatal(err)
		}
	})
}

// leader campaigns in a new group of the shared server and returns a
// context for the test, the session, the group and the leader's handle.
func leader(t *testing.T) (context.Context, *elect.Session, string, *elect.Handle) {
	t.Helper()
	ctx := ctxT(t, 60*time.Second)
	s := session(t, sharedAddrs(t))
	g := groupPath(t)
	el, err := elect.NewElection(s, g, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	h, err := el.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	return ctx, s, g, h
}

// landedThenLost has the leader h of g write a big record through a
// session behind a proxy: its first write lands but its reply is lost,
// meanwhile runs while the writer waits to reconnect, and its next write
// is cut off unsent. The record must be saved, and not taken for one the
// servers refuse as too big.
func landedThenLost(t *testing.T, ctx context.Context, s *elect.Session, g string, h *elect.Handle, meanwhile func()) {
	t.Helper()
	px := proxyTo(t, sharedAddrs(t)[0])
	w := session(t, []string{px.Addr()}, elect.WithSessionTimeout(20*time.Second))
	px.DropReplyTo(faultproxy.OpMulti)
	px.Refuse(true) // once the reply is lost, the writer waits to reconnect
	data := bytes.Repeat([]byte("c"), 100<<10)
	got := make(chan error, 1)
	go func() { got <- h.Fence().Checkpoint(ctx, w, data) }()
	eventually(t, 20*time.Second, "the first write's reply dropped", func() bool { return px.Dropped() == 1 })
	meanwhile()
	px.DropRequestTo(faultproxy.OpMulti)
	px.Refuse(false)
	err := <-got
	c, rerr := elect.ReadCheckpoint(ctx, s, g)
	if errors.Is(err, elect.ErrTooBig) {
		t.Fatalf("a record whose first write landed was taken for one too big: %v", err)
	}
	if err != nil || rerr != nil || !bytes.Equal(c.Data, data) {
		t.Fatalf("checkpoint: %v; then read %.10q (%v), want the record written", err, c.Data, rerr)
	}
}
