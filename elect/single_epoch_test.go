package elect_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestKafkaEpochAcrossARestart: an observer of Kafka's controller stops (its
// session ended, or its process), controllers are elected meanwhile, and a
// new observer continues from what the first knew: its last view (Since),
// or the last report a sink kept with its epoch (AfterReport and
// ReportEpoch). The epoch counts the elections exactly: one is no gap,
// although the parent's children changed besides (Kafka's /controller
// often sits in /, whose children every application changes); two are. A
// report without its epoch proves nothing, as before.
func TestKafkaEpochAcrossARestart(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, admin := session(t, addrs), session(t, addrs)
	chroot := groupPath(t)
	mkdirs(t, admin.Conn(), chroot)
	ctrl := chroot + "/controller"
	sn := elect.SingleNodeFor(ctrl)
	broker := func(id int) *elect.Session {
		s := session(t, addrs)
		kafkaElect(t, s.Conn(), chroot, id)
		return s
	}
	sibling := func(name string) { // another application's node beside the controller
		if _, err := admin.Conn().Create(chroot+"/"+name, nil, 0, openACL); err != nil {
			t.Fatal(err)
		}
	}
	look := func(opts ...elect.ObserveOption) (elect.Change, elect.View) {
		t.Helper()
		return firstSnapshot(t, obs, ctrl, sn, opts...)
	}
	report := func(c elect.Change) []elect.ObserveOption {
		return []elect.ObserveOption{elect.AfterReport(c.Owner.Node, c.Zxid, c.Recipe), elect.ReportEpoch(c.Epoch)}
	}
	check := func(what string, c elect.Change, broker string, epoch int64, gap bool) {
		t.Helper()
		if c.Owner == nil || c.Owner.ID != broker || c.Epoch != epoch || c.Gap != gap {
			t.Fatalf("%s: snapshot %+v; want broker %s, epoch %d, gap %v", what, c, broker, epoch, gap)
		}
	}

	b1 := broker(1)
	first, last := look()
	check("first", first, "1", 1, false)

	// One election while nobody looked, and a sibling made.
	_ = b1.Close()
	sibling("app-a")
	b2 := broker(2)
	c, _ := look(elect.Since(last))
	check("since, one election", c, "2", 2, false)
	second, last2 := look(report(first)...)
	check("report, one election", second, "2", 2, false)
	c, _ = look(elect.AfterReport(first.Owner.Node, first.Zxid, first.Recipe))
	check("report without its epoch, one election", c, "2", 2, true)

	// Two elections while nobody looked: broker 3's tenure passed unseen.
	_ = b2.Close()
	_ = broker(3).Close()
	sibling("app-b")
	b4 := broker(4)
	c, _ = look(elect.Since(last2))
	check("since, two elections", c, "4", 4, true)
	c, _ = look(report(second)...)
	check("report, two elections", c, "4", 4, true)

	// Its epoch node made again: the epoch went back, and counts nothing
	// of the elections in between. The parent's child counter does, the
	// epoch node counted beside the controller, for a view that keeps its
	// czxid (TestKafkaEpochNodeMadeAgainSinceAView); a report does not.
	fourth, last4 := look()
	check("fourth", fourth, "4", 4, false)
	_ = b4.Close()
	if err := admin.Conn().Delete(chroot+"/controller_epoch", -1); err != nil {
		t.Fatal(err)
	}
	broker(5)
	c, _ = look(elect.Since(last4))
	check("since, epoch made again", c, "5", 1, false)
	c, _ = look(report(fourth)...)
	check("report, epoch made again", c, "5", 1, true)
}

// firstSnapshot runs an observer of the leader node p until its first
// snapshot, then stops it; it returns the snapshot and the observer's last
// view.
func firstSnapshot(t *testing.T, s *elect.Session, p string, sn elect.SingleNode, opts ...elect.ObserveOption) (elect.Change, elect.View) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	o, err := elect.ObserveSingle(ctx, s, p, sn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c := expect(t, o.Observer, elect.Snapshot, nil)
	stop()
	o.Wait()
	v, ok := o.Last()
	if !ok {
		t.Fatal("no last view")
	}
	return c, v
}

// TestKafkaEpochSetByAnOperator: Kafka's /controller_epoch written by
// someone else than an election (an operator's set, a script "fixing"
// it) counts no elections, yet the observer took its value for their
// count. Set back by one, two elections that followed between two reads
// moved it by one, and the controller elected unseen went unmarked; set
// forward, a controller's plain end was published as a gap. Kafka writes
// the epoch once per election, so the node's data version moves with it:
// when the two disagree the parent's counters tell instead.
func TestKafkaEpochSetByAnOperator(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, op := session(t, addrs), session(t, addrs)
	chroot := groupPath(t)
	mkdirs(t, op.Conn(), chroot)
	ctrl, epoch := chroot+"/controller", chroot+"/controller_epoch"
	o := observeSingle(t, obs, ctrl, elect.SingleNodeFor(ctrl))
	expect(t, o.Observer, elect.Snapshot, nil)
	b1 := session(t, addrs)
	kafkaElect(t, b1.Conn(), chroot, 1)
	expect(t, o.Observer, elect.OwnerChanged, ownerIs("1"))

	if _, err := op.Conn().Set(epoch, []byte("0"), -1); err != nil { // back by one
		t.Fatal(err)
	}
	// Broker 1 gone, broker 2 elected and gone, broker 3 elected, in one
	// transaction: each election reads the epoch and writes it plus one.
	_, st, err := op.Conn().Get(epoch)
	if err != nil {
		t.Fatal(err)
	}
	b3 := session(t, addrs)
	if _, err := b3.Conn().Multi(
		&zk.DeleteRequest{Path: ctrl, Version: -1},
		&zk.CreateRequest{Path: ctrl, Data: kafkaControllerData(2), Acl: openACL, Flags: zk.FlagEphemeral},
		&zk.SetDataRequest{Path: epoch, Data: []byte("1"), Version: st.Version},
		&zk.DeleteRequest{Path: ctrl, Version: -1},
		&zk.CreateRequest{Path: ctrl, Data: kafkaControllerData(3), Acl: openACL, Flags: zk.FlagEphemeral},
		&zk.SetDataRequest{Path: epoch, Data: []byte("2"), Version: st.Version + 1},
	); err != nil {
		t.Fatal(err)
	}
	if c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("3")); !c.Gap || c.Previous == nil || c.Previous.ID != "1" {
		t.Errorf("broker 2's tenure passed unseen after an operator set the epoch back, yet: %+v; want a gap", c)
	}

	if _, err := op.Conn().Set(epoch, []byte("10"), -1); err != nil { // forward
		t.Fatal(err)
	}
	_ = b3.Close() // broker 3's plain end: nothing passed unseen
	if c := expect(t, o.Observer, elect.OwnerChanged, nil); c.Owner != nil || c.Previous == nil || c.Previous.ID != "3" || c.Gap {
		t.Errorf("broker 3's end after an operator set the epoch forward: %+v; want its end, no gap", c)
	}
}

// TestKafkaEpochHiddenByItsACL: an ACL on /controller_epoch that does not
// let herald READ it (an operator locking it down) ended the observation
// of the controller, which herald may read, with a bare "zk: not
// authenticated" naming neither node, and who failed the same way: the
// controller went unreported. The epoch is then unknown, and the note
// says why, as for an epoch node holding no number.
func TestKafkaEpochHiddenByItsACL(t *testing.T) {
	obs, _, b1, ctrl, epoch := hiddenEpoch(t)
	hidden := func(what, note string) {
		t.Helper()
		if !strings.Contains(note, "its epoch is not known") || !strings.Contains(note, epoch) || !strings.Contains(note, "ACL") {
			t.Errorf("%s notes %q; want it to say the epoch is not known, its ACL hiding %s", what, note, epoch)
		}
	}
	sv, err := elect.ReadSingle(ctxT(t, 10*time.Second), obs, ctrl, elect.SingleNodeFor(ctrl))
	if err != nil || sv.Owner == nil || sv.Owner.ID != "1" || sv.EpochKnown {
		t.Fatalf("ReadSingle = owner %+v, epoch known %v, %v; want broker 1, its epoch not known", sv.Owner, sv.EpochKnown, err)
	}
	hidden("ReadSingle", sv.Note())
	o := observeSingle(t, obs, ctrl, elect.SingleNodeFor(ctrl))
	hidden("the snapshot", expect(t, o.Observer, elect.Snapshot, ownerIs("1")).Note)
	_ = b1.Close()
	if c := expect(t, o.Observer, elect.OwnerChanged, nil); c.Previous == nil || c.Previous.ID != "1" {
		t.Errorf("broker 1's end: %+v", c)
	}
}

// TestOldKafkaFirstEpochIsNoGap: Kafka before 2.2 made /controller_epoch
// at the first election with that election's epoch, 1, so its data
// version (0) lags its value by one for ever. Taken for a write that was
// no election, the cluster's first controller, seen with its epoch, was
// checked against the parent's child counter, which the epoch node's own
// create moved too, and published as a gap: history said a tenure may be
// missing before the very first one.
func TestOldKafkaFirstEpochIsNoGap(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, op := session(t, addrs), session(t, addrs)
	chroot := groupPath(t)
	mkdirs(t, op.Conn(), chroot)
	ctrl, epoch := chroot+"/controller", chroot+"/controller_epoch"
	o := observeSingle(t, obs, ctrl, elect.SingleNodeFor(ctrl))
	expect(t, o.Observer, elect.Snapshot, nil)
	// Broker 1 creates /controller, then /controller_epoch with 1
	// (KafkaController.InitialControllerEpoch); one transaction here, as
	// read once both landed.
	b1 := session(t, addrs)
	if _, err := b1.Conn().Multi(
		&zk.CreateRequest{Path: ctrl, Data: kafkaControllerData(1), Acl: openACL, Flags: zk.FlagEphemeral},
		&zk.CreateRequest{Path: epoch, Data: []byte("1"), Acl: openACL},
	); err != nil {
		t.Fatal(err)
	}
	if c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("1")); c.Gap || c.Epoch != 1 {
		t.Errorf("the first controller of a Kafka before 2.2: %+v; want epoch 1, no gap", c)
	}
	// The next election sets the epoch at the version read: 2, version 1.
	_ = b1.Close()
	expect(t, o.Observer, elect.OwnerChanged, nil)
	b2 := session(t, addrs)
	if _, err := b2.Conn().Multi(
		&zk.CreateRequest{Path: ctrl, Data: kafkaControllerData(2), Acl: openACL, Flags: zk.FlagEphemeral},
		&zk.SetDataRequest{Path: epoch, Data: []byte("2"), Version: 0},
	); err != nil {
		t.Fatal(err)
	}
	if c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("2")); c.Gap || c.Epoch != 2 {
		t.Errorf("the second controller: %+v; want epoch 2, no gap", c)
	}
}

// TestKafkaEpochNodeMadeAgainIsAGap: /controller_epoch deleted and made
// again (a cluster wiped, its ZooKeeper data restored) starts counting
// from 0 again, at data version 0 again: its value and version moved
// alike, by as much as before the wipe, though the elections in between
// were not those they counted. Two controllers elected after the wipe,
// back at the epoch the observer last read, one of them unseen, were
// taken for one election and published without a gap.
func TestKafkaEpochNodeMadeAgainIsAGap(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, op := session(t, addrs), session(t, addrs)
	chroot := groupPath(t)
	mkdirs(t, op.Conn(), chroot)
	ctrl, epoch := chroot+"/controller", chroot+"/controller_epoch"
	b0 := session(t, addrs)
	kafkaElect(t, b0.Conn(), chroot, 0)
	if err := op.Conn().Delete(ctrl, -1); err != nil { // broker 0's end
		t.Fatal(err)
	}
	b1 := session(t, addrs)
	kafkaElect(t, b1.Conn(), chroot, 1) // epoch 2, version 2
	o := observeSingle(t, obs, ctrl, elect.SingleNodeFor(ctrl))
	if c := expect(t, o.Observer, elect.Snapshot, ownerIs("1")); c.Epoch != 2 {
		t.Fatalf("broker 1: %+v; want epoch 2", c)
	}
	// Wiped and elected twice, broker 2 unseen: the epoch node is back at
	// 2, version 2.
	b3 := session(t, addrs)
	if _, err := b3.Conn().Multi(
		&zk.DeleteRequest{Path: ctrl, Version: -1},
		&zk.DeleteRequest{Path: epoch, Version: -1},
		&zk.CreateRequest{Path: epoch, Data: []byte("0"), Acl: openACL},
		&zk.CreateRequest{Path: ctrl, Data: kafkaControllerData(2), Acl: openACL, Flags: zk.FlagEphemeral},
		&zk.SetDataRequest{Path: epoch, Data: []byte("1"), Version: 0},
		&zk.DeleteRequest{Path: ctrl, Version: -1},
		&zk.CreateRequest{Path: ctrl, Data: kafkaControllerData(3), Acl: openACL, Flags: zk.FlagEphemeral},
		&zk.SetDataRequest{Path: epoch, Data: []byte("2"), Version: 1},
	); err != nil {
		t.Fatal(err)
	}
	if c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("3")); !c.Gap || c.Previous == nil || c.Previous.ID != "1" {
		t.Errorf("broker 2 elected unseen after /controller_epoch was made again: %+v; want a gap", c)
	}
}

// TestKafkaEpochHiddenThenShownIsRestated: a Many that checks its groups
// (Resync) found the controller's epoch node readable again once its ACL
// was fixed, yet went on saying its epoch was not known because of that
// ACL, to readers of Leader and in the last change a sink keeps, until
// the next controller: ZooKeeper fires no watch for an ACL, and the check
// looked at the controller's node alone. The check reads the epoch node
// again while it is hidden, and the owner is restated with its epoch.
func TestKafkaEpochHiddenThenShownIsRestated(t *testing.T) {
	obs, op, _, ctrl, epoch := hiddenEpoch(t)
	ctx, cancel := context.WithCancel(context.Background())
	m, err := elect.ObserveMany(ctx, obs, elect.Resync(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-m.Done() })
	if err := m.AddSingle(ctrl, elect.SingleNodeFor(ctrl)); err != nil {
		t.Fatal(err)
	}
	if c := expect(t, m, elect.Snapshot, ownerIs("1")); !strings.Contains(c.Note, "may not be read") {
		t.Fatalf("the snapshot: %+v; want a note that its epoch may not be read", c)
	}
	if err := op.Conn().AddAuth("digest", []byte("kafka:secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Conn().SetACL(epoch, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	c := expect(t, m, elect.Snapshot, ownerIs("1"))
	if c.Epoch != 1 || c.Note != "" || c.Gap || c.Owner.Node != "controller@"+strconv.FormatInt(czxidOf(t, op.Conn(), ctrl), 10) {
		t.Errorf("the epoch readable again: %+v; want broker 1's tenure restated with epoch 1, no note, no gap", c)
	}
	if l, ok := m.Leader(ctrl); !ok || !l.EpochKnown || l.Epoch != 1 || l.EpochErr != "" {
		t.Errorf("Leader once the epoch is readable again: %+v", l)
	}
}

// hiddenEpoch elects broker 1 Kafka's controller in a new root of the
// shared server and gives its /controller_epoch an ACL that does not let
// herald READ it. It returns an observer's session, an operator's, and
// broker 1's, and the controller's and the epoch's paths.
func hiddenEpoch(t *testing.T) (obs, op, broker *elect.Session, ctrl, epoch string) {
	t.Helper()
	addrs := sharedAddrs(t)
	obs, op = session(t, addrs), session(t, addrs)
	root := groupPath(t)
	mkdirs(t, op.Conn(), root)
	ctrl, epoch = root+"/controller", root+"/controller_epoch"
	broker = session(t, addrs)
	kafkaElect(t, broker.Conn(), root, 1)
	if _, err := op.Conn().SetACL(epoch, zk.DigestACL(zk.PermAll, "kafka", "secret"), -1); err != nil {
		t.Fatal(err)
	}
	return obs, op, broker, ctrl, epoch
}
