package elect_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestForeignCheckpointDeposesNobody: a checkpoint (and an office record)
// copied in from another group names a later term than this group's live
// leader. It cannot be
// this group's (a node made after the leader's never owned while the
// leader's exists): the leader's next checkpoint replaces it, where it used
// to be refused as deposed, every time, for as long as it led. A record
// written by hand whose writer is no queue node's name is no checkpoint.
func TestForeignCheckpointDeposesNobody(t *testing.T) {
	s := session(t, sharedAddrs(t))
	ctx := ctxT(t, 20*time.Second)
	campaign := func(g string) *elect.Handle {
		e, err := elect.NewElection(s, g, elect.CreateParents())
		if err != nil {
			t.Fatal(err)
		}
		h, err := e.Campaign(ctx, "leader")
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	mine, other := groupPath(t), groupPath(t)+"-other"
	h := campaign(mine)
	theirs := campaign(other) // a later term than h's
	if err := theirs.Checkpoint(ctx, []byte("their state")); err != nil {
		t.Fatal(err)
	}
	data, _, err := s.Conn().Get(other + "/" + elect.CheckpointNode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Conn().Create(mine+"/"+elect.CheckpointNode, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := h.Checkpoint(ctx, []byte("my state")); err != nil {
		t.Fatalf("the live leader's checkpoint over one copied from another group: %v; want it written", err)
	}
	cp, err := elect.ReadCheckpoint(ctx, s, mine)
	if err != nil || string(cp.Data) != "my state" || cp.Term != h.Term() {
		t.Fatalf("checkpoint after the leader's write: %+v, %v; want its own", cp, err)
	}
	// The same for the office: an acknowledgment copied from the other
	// group does not depose the live leader.
	if err := theirs.Acknowledge(ctx, "their pid"); err != nil {
		t.Fatal(err)
	}
	office, _, err := s.Conn().Get(other + "/" + elect.OfficeNode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Conn().Create(mine+"/"+elect.OfficeNode, office, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := h.Acknowledge(ctx, "my pid"); err != nil {
		t.Fatalf("the live leader's acknowledgment over an office copied from another group: %v; want it written", err)
	}
	// A real later term still deposes: the leader resigns, the next one
	// writes, and the old fence is refused.
	old := h.Fence()
	if err := h.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	next := campaign(mine)
	if err := next.Checkpoint(ctx, []byte("next state")); err != nil {
		t.Fatal(err)
	}
	if err := old.Checkpoint(ctx, s, []byte("late")); !errors.Is(err, elect.ErrNotLeader) {
		t.Fatalf("a deposed leader's late checkpoint: %v, want ErrNotLeader", err)
	}
	hand := []byte(`{"term":5,"node":"x","id":"y","time":"2020-01-01T00:00:00Z","data":"aGk="}`)
	if _, err := s.Conn().Set(mine+"/"+elect.CheckpointNode, hand, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := elect.ReadCheckpoint(ctx, s, mine); !errors.Is(err, elect.ErrBadCheckpoint) {
		t.Fatalf("a hand-written record naming node \"x\": %v, want ErrBadCheckpoint", err)
	}
}

// TestHandWrittenRecordNamingNoNodeDeposesNobody: an office or checkpoint
// written by hand (an operator's set) with a later term than the live
// leader's, whose writer names no queue node a group can hold (empty, a
// path, herald's own checkpoint node), is no later owner's record: the
// live leader's writes replace it. Its writer's lookup failed on the
// invalid path, or found the side node, and the record deposed the
// leader, whose every checkpoint was refused (exit 3 for `herald
// checkpoint put`, which tells a command to stop) for as long as it led.
func TestHandWrittenRecordNamingNoNodeDeposesNobody(t *testing.T) {
	s := session(t, sharedAddrs(t))
	w := session(t, sharedAddrs(t))
	ctx := ctxT(t, 30*time.Second)
	g := groupPath(t)
	e, err := elect.NewElection(s, g, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Campaign(ctx, "leader")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Acknowledge(ctx, "pid 1"); err != nil {
		t.Fatal(err)
	}
	if err := h.Checkpoint(ctx, []byte("step=1")); err != nil {
		t.Fatal(err)
	}
	later := h.Term() + 1 // after the leader's node, before the write below
	at := time.Now().UTC().Format(time.RFC3339)
	for _, tc := range []struct{ name, node, data string }{
		{"office naming no node", elect.OfficeNode, fmt.Sprintf(`{"herald":1,"ack":{"node":"","id":"x","term":%d,"time":%q}}`, later, at)},
		{"office naming the checkpoint", elect.OfficeNode, fmt.Sprintf(`{"herald":1,"released":{"node":%q,"id":"x","term":%d,"reason":"resigned","time":%q}}`, elect.CheckpointNode, later, at)},
		{"office naming a path", elect.OfficeNode, fmt.Sprintf(`{"herald":1,"ack":{"node":"../n_0000000001","id":"x","term":%d,"time":%q}}`, later, at)},
		{"checkpoint naming a path", elect.CheckpointNode, fmt.Sprintf(`{"term":%d,"node":"../n_0000000001","id":"x","time":%q,"data":"aGk="}`, later, at)},
	} {
		if _, err := w.Conn().Set(g+"/"+tc.node, []byte(tc.data), -1); err != nil {
			t.Fatal(err)
		}
		if _, err := elect.ReadCheckpoint(ctx, w, g); tc.node == elect.CheckpointNode && !errors.Is(err, elect.ErrBadCheckpoint) {
			t.Errorf("%s: read: %v; want ErrBadCheckpoint", tc.name, err)
		}
		if err := h.Checkpoint(ctx, []byte("step="+tc.name)); err != nil {
			t.Errorf("%s: the live leader's checkpoint: %v; want it written", tc.name, err)
		}
		if err := h.Fence().Checkpoint(ctx, w, []byte("helper "+tc.name)); err != nil {
			t.Errorf("%s: the live leader's checkpoint through its fence: %v; want it written", tc.name, err)
		}
		if err := h.Acknowledge(ctx, "pid 2"); err != nil {
			t.Errorf("%s: the live leader's acknowledgment: %v; want it written", tc.name, err)
		}
	}
	cp, err := elect.ReadCheckpoint(ctx, w, g)
	if err != nil || cp.Term != h.Term() {
		t.Fatalf("checkpoint after the leader's writes: %+v, %v; want its own", cp, err)
	}
}
