package elect_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestKafkaEpochNodeMadeAgainByTheNextElection: /controller_epoch deleted
// under a live controller is made again by the next election (Kafka
// creates it with 0, then sets it in the election's transaction). Its
// making moves /controller's parent's child counter too, and, with the
// epoch unknown before, that counter told the change of controller: the
// next controller was a gap though nothing went unseen. The epoch node
// is counted as the sibling it is; a controller elected and gone unseen
// in between is still a gap.
func TestKafkaEpochNodeMadeAgainByTheNextElection(t *testing.T) {
	for _, many := range []bool{false, true} {
		for _, unseen := range []bool{false, true} {
			name := map[bool]string{false: "ObserveSingle", true: "Many"}[many] + map[bool]string{false: "/next", true: "/one-unseen"}[unseen]
			t.Run(name, func(t *testing.T) { epochMadeAgainByTheNextElection(t, many, unseen) })
		}
	}
}

// TestKafkaEpochNodeDeletedUnseenThenMadeAgain: /controller_epoch
// deleted under a live controller and made again by the next election,
// all between two reads, was a gap: an epoch node made again counts
// from 0 again, so its value counts nothing. The parent's child counter
// does, the epoch node counted beside the controller; a controller
// elected and gone in between is still a gap
// (TestKafkaEpochNodeMadeAgainIsAGap).
func TestKafkaEpochNodeDeletedUnseenThenMadeAgain(t *testing.T) {
	for _, many := range []bool{false, true} {
		t.Run(map[bool]string{false: "ObserveSingle", true: "Many"}[many], func(t *testing.T) {
			addrs, op, root, ctrl, epoch := kafkaRoot(t)
			obs, b1 := session(t, addrs), session(t, addrs)
			kafkaElect(t, b1.Conn(), root, 1)
			o := epochChecked(t, obs, ctrl, many)
			expect(t, o, elect.Snapshot, ownerIs("1"))
			if _, err := op.Conn().Multi(
				&zk.DeleteRequest{Path: epoch, Version: -1},
				&zk.DeleteRequest{Path: ctrl, Version: -1},
				&zk.CreateRequest{Path: epoch, Data: []byte("0"), Acl: openACL},
				&zk.CreateRequest{Path: ctrl, Data: kafkaControllerData(2), Acl: openACL, Flags: zk.FlagEphemeral},
				&zk.SetDataRequest{Path: epoch, Data: []byte("1"), Version: 0},
			); err != nil {
				t.Fatal(err)
			}
			if c := expect(t, o, elect.OwnerChanged, ownerIs("2")); c.Gap || c.Epoch != 1 {
				t.Errorf("broker 2 after /controller_epoch was deleted unseen and made again: %+v; want epoch 1, no gap", c)
			}
		})
	}
}

func epochMadeAgainByTheNextElection(t *testing.T, many, unseen bool) {
	addrs, op, root, ctrl, epoch := kafkaRoot(t)
	obs, b1 := session(t, addrs), session(t, addrs)
	kafkaElect(t, b1.Conn(), root, 1)
	o := epochChecked(t, obs, ctrl, many)
	expect(t, o, elect.Snapshot, ownerIs("1"))
	if err := op.Conn().Delete(epoch, -1); err != nil {
		t.Fatal(err)
	}
	if c := expect(t, o, elect.Snapshot, ownerIs("1")); !strings.Contains(c.Note, "does not exist") {
		t.Fatalf("the epoch node deleted: %+v; want a note saying so", c)
	}
	// Broker 1 goes and the next election makes the epoch node again, all
	// between two reads; with unseen, broker 2 leads and goes first.
	ops := []any{&zk.DeleteRequest{Path: ctrl, Version: -1}, &zk.CreateRequest{Path: epoch, Data: []byte("0"), Acl: openACL}}
	next, want := 2, int64(1)
	if unseen {
		ops = append(ops, &zk.CreateRequest{Path: ctrl, Data: kafkaControllerData(2), Acl: openACL, Flags: zk.FlagEphemeral},
			&zk.SetDataRequest{Path: epoch, Data: []byte("1"), Version: 0}, &zk.DeleteRequest{Path: ctrl, Version: -1})
		next, want = 3, 2
	}
	ops = append(ops, &zk.CreateRequest{Path: ctrl, Data: kafkaControllerData(next), Acl: openACL, Flags: zk.FlagEphemeral},
		&zk.SetDataRequest{Path: epoch, Data: []byte(strconv.FormatInt(want, 10)), Version: int32(want - 1)})
	if _, err := op.Conn().Multi(ops...); err != nil {
		t.Fatal(err)
	}
	c := expect(t, o, elect.OwnerChanged, ownerIs(strconv.Itoa(next)))
	if c.Gap != unseen || c.Epoch != want {
		t.Errorf("broker %d elected after /controller_epoch was made again (broker 2 unseen: %v): %+v; want epoch %d, gap %v", next, unseen, c, want, unseen)
	}
}

// TestKafkaEpochNodeDeletedUnseenThenTheControllerGoes: /controller_epoch
// deleted under a live controller, which then went, all before the next
// read (the epoch node has no watch; the controller's end is read at
// once, before the next election makes the node again), read as an
// epoch gone back to 0: the controller's end was a gap though nothing
// went unseen. A node deleted counts nothing, as one made again; the
// parent's counters tell, and a controller elected and gone in between
// (its epoch node deleted too) is still a gap.
func TestKafkaEpochNodeDeletedUnseenThenTheControllerGoes(t *testing.T) {
	for _, many := range []bool{false, true} {
		for _, unseen := range []bool{false, true} {
			name := map[bool]string{false: "ObserveSingle", true: "Many"}[many] + map[bool]string{false: "/end", true: "/one-unseen"}[unseen]
			t.Run(name, func(t *testing.T) { epochDeletedThenTheControllerGoes(t, many, unseen) })
		}
	}
}

func epochDeletedThenTheControllerGoes(t *testing.T, many, unseen bool) {
	addrs, op, root, ctrl, epoch := kafkaRoot(t)
	obs, b1 := session(t, addrs), session(t, addrs)
	// An epoch past 1: a node made again is not back at it.
	if _, err := op.Conn().Create(epoch, []byte("5"), 0, openACL); err != nil {
		t.Fatal(err)
	}
	kafkaElect(t, b1.Conn(), root, 1)
	o := epochChecked(t, obs, ctrl, many)
	expect(t, o, elect.Snapshot, ownerIs("1"))
	ops := []any{&zk.DeleteRequest{Path: epoch, Version: -1}, &zk.DeleteRequest{Path: ctrl, Version: -1}}
	if unseen {
		ops = append(ops, &zk.CreateRequest{Path: epoch, Data: []byte("0"), Acl: openACL},
			&zk.CreateRequest{Path: ctrl, Data: kafkaControllerData(2), Acl: openACL, Flags: zk.FlagEphemeral},
			&zk.SetDataRequest{Path: epoch, Data: []byte("1"), Version: 0},
			&zk.DeleteRequest{Path: ctrl, Version: -1}, &zk.DeleteRequest{Path: epoch, Version: -1})
	}
	if _, err := op.Conn().Multi(ops...); err != nil {
		t.Fatal(err)
	}
	c := expect(t, o, elect.OwnerChanged, nil)
	if c.Owner != nil || c.Gap != unseen {
		t.Errorf("broker 1 gone with /controller_epoch (broker 2 unseen: %v): %+v; want no owner, gap %v", unseen, c, unseen)
	}
	kafkaElect(t, b1.Conn(), root, 3)
	if c := expect(t, o, elect.OwnerChanged, ownerIs("3")); c.Gap || c.Epoch != 1 {
		t.Errorf("broker 3 elected, making /controller_epoch again: %+v; want epoch 1, no gap", c)
	}
}

// TestKafkaEpochNodeMadeAgainSinceAReport: a report's epoch counts the
// elections since it only while the epoch node is the one it was read
// from. Deleted and made again since (its epoch from 0 again), two
// elections after the report moved it by one from the report's epoch:
// broker 2's tenure passed without a gap mark. A node made after the
// report's zxid counts nothing of it.
func TestKafkaEpochNodeMadeAgainSinceAReport(t *testing.T) {
	addrs, op, root, ctrl, epoch := kafkaRoot(t)
	obs := session(t, addrs)
	sn := elect.SingleNodeFor(ctrl)
	b1 := session(t, addrs)
	kafkaElect(t, b1.Conn(), root, 1)
	first, _ := firstSnapshot(t, obs, ctrl, sn)
	if err := op.Conn().Delete(epoch, -1); err != nil {
		t.Fatal(err)
	}
	_ = b1.Close()
	b2 := session(t, addrs)
	kafkaElect(t, b2.Conn(), root, 2)
	_ = b2.Close()
	kafkaElect(t, session(t, addrs).Conn(), root, 3)
	c, _ := firstSnapshot(t, obs, ctrl, sn, elect.AfterReport(first.Owner.Node, first.Zxid, first.Recipe), elect.ReportEpoch(first.Epoch))
	if c.Owner == nil || c.Owner.ID != "3" || c.Epoch != 2 || !c.Gap {
		t.Errorf("broker 3 after the report of broker 1 (epoch %d), broker 2 unseen, its epoch node made again: %+v; want epoch 2, gap", first.Epoch, c)
	}
}

// TestKafkaEpochNodeMadeAgainSinceAView: an observation continued from
// another's view (Since: the bridge's session made again) after
// /controller_epoch was deleted and made again by the next election did
// not count the epoch node's making beside the controller, as the
// observer that read both does: the next controller was a gap though
// nothing went unseen. The view keeps the epoch node's czxid; a
// controller elected and gone in between is still a gap.
func TestKafkaEpochNodeMadeAgainSinceAView(t *testing.T) {
	for _, unseen := range []bool{false, true} {
		t.Run(map[bool]string{false: "next", true: "one-unseen"}[unseen], func(t *testing.T) {
			addrs, op, root, ctrl, epoch := kafkaRoot(t)
			obs, b1 := session(t, addrs), session(t, addrs)
			sn := elect.SingleNodeFor(ctrl)
			kafkaElect(t, b1.Conn(), root, 1)
			_, last := firstSnapshot(t, obs, ctrl, sn)
			if err := op.Conn().Delete(epoch, -1); err != nil {
				t.Fatal(err)
			}
			_ = b1.Close()
			next := 2
			if unseen {
				b2 := session(t, addrs)
				kafkaElect(t, b2.Conn(), root, 2)
				_ = b2.Close()
				next = 3
			}
			kafkaElect(t, session(t, addrs).Conn(), root, next)
			c, _ := firstSnapshot(t, obs, ctrl, sn, elect.Since(last))
			if c.Owner == nil || c.Owner.ID != strconv.Itoa(next) || c.Gap != unseen {
				t.Errorf("broker %d after /controller_epoch was made again since the view (broker 2 unseen: %v): %+v; want gap %v", next, unseen, c, unseen)
			}
		})
	}
}

// kafkaRoot makes a Kafka's root on the shared ensemble, and returns the
// ensemble's addresses, an operator's session, the root and its
// controller's and epoch node's paths.
func kafkaRoot(t *testing.T) (addrs []string, op *elect.Session, root, ctrl, epoch string) {
	t.Helper()
	addrs = sharedAddrs(t)
	op = session(t, addrs)
	root = groupPath(t)
	mkdirs(t, op.Conn(), root)
	return addrs, op, root, root + "/controller", root + "/controller_epoch"
}

// TestKafkaEpochNodeMadeAgainSinceAReportOfZero: a report of epoch 0 (no
// controller yet, /controller_epoch made at 0 before the first election)
// counts nothing in an epoch node made after it either: broker 1 elected
// (epoch 1) and gone, the node deleted and made again at 0 by broker 2's
// election (epoch 1 again), moved it by one from the report's 0, and
// broker 1's tenure passed without a gap mark.
func TestKafkaEpochNodeMadeAgainSinceAReportOfZero(t *testing.T) {
	addrs, op, root, ctrl, epoch := kafkaRoot(t)
	if _, err := op.Conn().Create(epoch, []byte("0"), 0, openACL); err != nil {
		t.Fatal(err)
	}
	obs := session(t, addrs)
	sn := elect.SingleNodeFor(ctrl)
	first, _ := firstSnapshot(t, obs, ctrl, sn)
	if first.Owner != nil || first.Epoch != 0 {
		t.Fatalf("no controller yet: %+v; want no owner, epoch 0", first)
	}
	b1 := session(t, addrs)
	kafkaElect(t, b1.Conn(), root, 1)
	_ = b1.Close()
	if err := op.Conn().Delete(epoch, -1); err != nil {
		t.Fatal(err)
	}
	kafkaElect(t, session(t, addrs).Conn(), root, 2)
	c, _ := firstSnapshot(t, obs, ctrl, sn, elect.AfterReport("", first.Zxid, first.Recipe), elect.ReportEpoch(first.Epoch))
	if c.Owner == nil || c.Owner.ID != "2" || c.Epoch != 1 || !c.Gap {
		t.Errorf("broker 2 after a report of epoch 0, broker 1 unseen, its epoch node made again: %+v; want epoch 1, gap", c)
	}
}
