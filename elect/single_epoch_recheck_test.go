package elect_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// epochChecked observes Kafka's controller at ctrl the way that checks its
// epoch node between changes: ObserveSingle with a short EpochRecheck, or
// (many) a Many with a short Resync.
func epochChecked(t *testing.T, s *elect.Session, ctrl string, many bool) source {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if !many {
		o, err := elect.ObserveSingle(ctx, s, ctrl, elect.SingleNodeFor(ctrl), elect.EpochRecheck(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); o.Wait() })
		return o.Observer
	}
	m, err := elect.ObserveMany(ctx, s, elect.Resync(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-m.Done() })
	if err := m.AddSingle(ctrl, elect.SingleNodeFor(ctrl)); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestObserveSingleLearnsAnEpochACLFixed: ObserveSingle, which checked
// nothing between changes, went on saying the controller's epoch was not
// known because of its ACL, once that ACL was fixed, until the next
// controller. It reads the epoch node again (EpochRecheck) and restates
// the same tenure with its epoch, as Many's Resync does.
func TestObserveSingleLearnsAnEpochACLFixed(t *testing.T) {
	obs, op, _, ctrl, epoch := hiddenEpoch(t)
	o := epochChecked(t, obs, ctrl, false)
	first := expect(t, o, elect.Snapshot, ownerIs("1"))
	if !strings.Contains(first.Note, "may not be read") {
		t.Fatalf("the snapshot: %+v; want a note that its epoch may not be read", first)
	}
	if err := op.Conn().AddAuth("digest", []byte("kafka:secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Conn().SetACL(epoch, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	c := expect(t, o, elect.Snapshot, ownerIs("1"))
	if c.Epoch != 1 || c.Note != "" || c.Gap || c.Owner.Node != first.Owner.Node {
		t.Errorf("the epoch readable again: %+v; want broker 1's tenure (%s) restated with epoch 1, no note, no gap", c, first.Owner.Node)
	}
}

// TestKafkaEpochDeletedUnderTheController: /controller_epoch deleted while
// a controller held was left out of the events and of who without a word,
// as if Kafka kept no epoch, and its return went unseen until the next
// controller. The owner is restated with a note naming the missing node,
// then with its epoch once the node is back, the tenure unbroken and no
// gap; the next controller counts from the node made again.
func TestKafkaEpochDeletedUnderTheController(t *testing.T) {
	for _, many := range []bool{false, true} {
		name := "ObserveSingle"
		if many {
			name = "Many"
		}
		t.Run(name, func(t *testing.T) { epochDeletedUnderTheController(t, many) })
	}
}

func epochDeletedUnderTheController(t *testing.T, many bool) {
	addrs, op, root, ctrl, epoch := kafkaRoot(t)
	obs, b1 := session(t, addrs), session(t, addrs)
	kafkaElect(t, b1.Conn(), root, 1)
	o := epochChecked(t, obs, ctrl, many)
	first := expect(t, o, elect.Snapshot, ownerIs("1"))
	if first.Epoch != 1 || first.Note != "" {
		t.Fatalf("the snapshot: %+v; want epoch 1, no note", first)
	}
	if err := op.Conn().Delete(epoch, -1); err != nil {
		t.Fatal(err)
	}
	gone := expect(t, o, elect.Snapshot, ownerIs("1"))
	if !strings.Contains(gone.Note, epoch+" does not exist") || gone.Gap || gone.Owner.Node != first.Owner.Node {
		t.Errorf("the epoch node deleted: %+v; want broker 1's tenure restated, no gap, a note that %s does not exist", gone, epoch)
	}
	sv, err := elect.ReadSingle(ctxT(t, 10*time.Second), obs, ctrl, elect.SingleNodeFor(ctrl))
	if err != nil || sv.EpochKnown || !strings.Contains(sv.Note(), epoch+" does not exist") {
		t.Errorf("ReadSingle without the epoch node: known %v, note %q, %v; want it to say %s does not exist", sv.EpochKnown, sv.Note(), err, epoch)
	}
	if _, err := op.Conn().Create(epoch, []byte("1"), 0, openACL); err != nil {
		t.Fatal(err)
	}
	back := expect(t, o, elect.Snapshot, ownerIs("1"))
	if back.Epoch != 1 || back.Note != "" || back.Gap || back.Owner.Node != first.Owner.Node {
		t.Errorf("the epoch node back: %+v; want broker 1's tenure restated with epoch 1, no note, no gap", back)
	}
	_ = b1.Close()
	expect(t, o, elect.OwnerChanged, nil)
	b2 := session(t, addrs)
	kafkaElect(t, b2.Conn(), root, 2)
	if c := expect(t, o, elect.OwnerChanged, ownerIs("2")); c.Epoch != 2 || c.Gap || c.Note != "" {
		t.Errorf("the next controller: %+v; want epoch 2, no gap, no note", c)
	}
}

// TestKafkaEpochNoNumberAndItsFixAreTold: /controller_epoch written with
// no number in the very transaction of an election is said at once (the
// snapshot's note), but its fix went unseen until the next controller,
// as did no number set later under the same controller: no watch is set
// on the epoch node. The check that reads it between changes
// (EpochRecheck, Resync) now finds both, and the tenure is restated,
// without a gap.
func TestKafkaEpochNoNumberAndItsFixAreTold(t *testing.T) {
	for _, many := range []bool{false, true} {
		name := "ObserveSingle"
		if many {
			name = "Many"
		}
		t.Run(name, func(t *testing.T) { epochNoNumberAndItsFix(t, many) })
	}
}

func epochNoNumberAndItsFix(t *testing.T, many bool) {
	addrs, op, _, ctrl, epoch := kafkaRoot(t)
	obs, b1 := session(t, addrs), session(t, addrs)
	if _, err := op.Conn().Create(epoch, []byte("0"), 0, openACL); err != nil {
		t.Fatal(err)
	}
	if _, err := b1.Conn().Multi(
		&zk.CreateRequest{Path: ctrl, Data: kafkaControllerData(1), Acl: openACL, Flags: zk.FlagEphemeral},
		&zk.SetDataRequest{Path: epoch, Data: []byte("garbage"), Version: 0},
	); err != nil {
		t.Fatal(err)
	}
	o := epochChecked(t, obs, ctrl, many)
	first := expect(t, o, elect.Snapshot, ownerIs("1"))
	if !strings.Contains(first.Note, epoch+` holds data that is no epoch (ident: epoch "garbage"`) {
		t.Fatalf("the snapshot: %+v; want a note naming %s and what it holds", first, epoch)
	}
	say := func(data, want string) elect.Change {
		t.Helper()
		if _, err := op.Conn().Set(epoch, []byte(data), -1); err != nil {
			t.Fatal(err)
		}
		c := expect(t, o, elect.Snapshot, ownerIs("1"))
		if c.Gap || c.Owner.Node != first.Owner.Node || !strings.Contains(c.Note, want) || want == "" && c.Note != "" {
			t.Errorf("%s set to %q: %+v; want broker 1's tenure restated, no gap, note %q", epoch, data, c, want)
		}
		return c
	}
	if c := say("1", ""); c.Epoch != 1 {
		t.Errorf("the epoch fixed: epoch %d, want 1", c.Epoch)
	}
	say("nope", `epoch "nope"`)
}
