package elect_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/elect/ident"
)

// TestKRaftRewriteBeforeARestartKeepsTheTenure: a running observer keeps
// a KRaft controller's tenure through a write of /controller naming the
// same controller and KRaft epoch (an operator's set, a restore of the
// same bytes), but a bridge restarted after it, or who, took that write
// for a new tenure: a new leader published, history split in two. A KRaft
// controller registers by writing /controller_epoch and /controller in one
// transaction, so the epoch node's last write dates the tenure; a
// re-registration still is a new one. Without the epoch node a restart
// keeps the reported tenure and says it may continue, rather than invent
// an election, marked as a gap since it may hide one.
func TestKRaftRewriteBeforeARestartKeepsTheTenure(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, w := session(t, addrs), session(t, addrs)
	chroot := groupPath(t)
	mkdirs(t, w.Conn(), chroot)
	ctrl, epoch := chroot+"/controller", chroot+"/controller_epoch"
	kraft := func(epoch int) []byte {
		return fmt.Appendf(nil, `{"version":2,"brokerid":3000,"timestamp":"1","kraftControllerEpoch":%d}`, epoch)
	}
	// The ZooKeeper-mode controllers' epoch, then KRaft controller 3000's
	// registration.
	if _, err := w.Conn().Create(epoch, []byte("3"), 0, openACL); err != nil {
		t.Fatal(err)
	}
	register := func(kraftEpoch int) {
		t.Helper()
		ops := []any{&zk.SetDataRequest{Path: epoch, Data: fmt.Append(nil, kraftEpoch), Version: -1}}
		if ok, _, _ := w.Conn().Exists(ctrl); ok {
			ops = append(ops, &zk.SetDataRequest{Path: ctrl, Data: kraft(kraftEpoch), Version: -1})
		} else {
			ops = append(ops, &zk.CreateRequest{Path: ctrl, Data: kraft(kraftEpoch), Acl: openACL})
		}
		if _, err := w.Conn().Multi(ops...); err != nil {
			t.Fatal(err)
		}
	}
	register(5)
	sn := elect.SingleNodeFor(ctrl)
	snap := expect(t, observeSingle(t, obs, ctrl, sn).Observer, elect.Snapshot, ownerIs("3000"))
	if _, err := w.Conn().Set(ctrl, kraft(5), -1); err != nil { // the same bytes again
		t.Fatal(err)
	}
	restarted := func(sn elect.SingleNode) elect.Change {
		t.Helper()
		o := observeSingle(t, obs, ctrl, sn, elect.AfterOwner(snap.Owner.Node, snap.Zxid), elect.ReportEpoch(snap.Epoch), elect.ReportOwnerID("3000"))
		return expect(t, o.Observer, elect.Snapshot, ownerIs("3000"))
	}
	if c := restarted(sn); c.Owner.Node != snap.Owner.Node || c.Gap || c.Note != elect.KRaftNote {
		t.Errorf("restarted after the same bytes were written again: %+v; want the tenure %s, no gap, only the KRaft note", c, snap.Owner.Node)
	}
	if sv, err := elect.ReadSingle(ctxT(t, 10*time.Second), obs, ctrl, sn); err != nil || sv.Owner == nil || sv.Owner.Node != snap.Owner.Node {
		t.Errorf("ReadSingle after the same bytes were written again: %+v, %v; want the tenure %s", sv.Owner, err, snap.Owner.Node)
	}
	// Without the epoch node, a restart keeps the report and says so; as
	// the write may be a re-election, the restatement is a gap
	// (TestKRaftReElectionBeforeARestartWithoutItsEpochIsAGap).
	c := restarted(elect.SingleNode{Format: ident.Kafka})
	if c.Owner.Node != snap.Owner.Node || !c.Gap || !strings.Contains(c.Note, "tenure may continue") {
		t.Errorf("restarted without the epoch node: %+v; want the tenure %s, a gap, a note that it may continue", c, snap.Owner.Node)
	}
	// Registered again in KRaft epoch 6: a new tenure.
	register(6)
	_, st, err := w.Conn().Get(ctrl)
	if err != nil {
		t.Fatal(err)
	}
	if c := restarted(sn); c.Owner.Node != fmt.Sprintf("controller@%d", st.Mzxid) || c.Note != elect.KRaftNote {
		t.Errorf("restarted after a re-registration: %+v; want the tenure controller@%d, only the KRaft note", c, st.Mzxid)
	}
}

// TestKRaftReElectionBeforeARestartWithoutItsEpochIsAGap: without the
// epoch node, a restart that finds /controller written since the report,
// naming the reported controller, keeps the reported tenure; but that
// write may be a re-election: another controller's tenure and the
// reported one's re-registration in a later KRaft epoch, both while the
// bridge was down. Kept with a note and no gap, those tenures were lost
// without a mark; the restatement is a gap, as the note says it may be.
func TestKRaftReElectionBeforeARestartWithoutItsEpochIsAGap(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, w := session(t, addrs), session(t, addrs)
	chroot := groupPath(t)
	mkdirs(t, w.Conn(), chroot)
	ctrl := chroot + "/controller"
	kraft := func(broker, epoch int) []byte {
		return fmt.Appendf(nil, `{"version":2,"brokerid":%d,"timestamp":"1","kraftControllerEpoch":%d}`, broker, epoch)
	}
	if _, err := w.Conn().Create(ctrl, kraft(3000, 5), 0, openACL); err != nil {
		t.Fatal(err)
	}
	sn := elect.SingleNode{Format: ident.Kafka} // no epoch path
	snap := expect(t, observeSingle(t, obs, ctrl, sn).Observer, elect.Snapshot, ownerIs("3000"))
	// While the bridge is down: controller 3001 in KRaft epoch 6, then
	// 3000 again in KRaft epoch 7, each a registration's write.
	for _, d := range [][]byte{kraft(3001, 6), kraft(3000, 7)} {
		if _, err := w.Conn().Set(ctrl, d, -1); err != nil {
			t.Fatal(err)
		}
	}
	o := observeSingle(t, obs, ctrl, sn, elect.AfterOwner(snap.Owner.Node, snap.Zxid), elect.ReportOwnerID("3000"))
	c := expect(t, o.Observer, elect.Snapshot, ownerIs("3000"))
	if c.Owner.Node == snap.Owner.Node && !c.Gap {
		t.Errorf("restarted after a re-election, without the epoch node: %+v; want a gap (or a new tenure), not the tenure %s unmarked", c, snap.Owner.Node)
	}
	if !strings.Contains(c.Note, "tenure may continue") {
		t.Errorf("restarted without the epoch node: note %q; want it to say the tenure may continue", c.Note)
	}
}

// TestKRaftRewriteSeenBeforeASessionMadeAgainIsNoGap: an observer on a new
// session continues the last one's view (Since). When that observer read
// the write of /controller since the tenure began, and kept the tenure
// (the same controller in the same KRaft epoch), no election can hide in
// it: the restatement is no gap, nor says the tenure may continue, unlike
// a restart on a report older than the write
// (TestKRaftReElectionBeforeARestartWithoutItsEpochIsAGap).
func TestKRaftRewriteSeenBeforeASessionMadeAgainIsNoGap(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, w := session(t, addrs), session(t, addrs)
	chroot := groupPath(t)
	mkdirs(t, w.Conn(), chroot)
	ctrl := chroot + "/controller"
	kraft := func(ts int) []byte {
		return fmt.Appendf(nil, `{"version":2,"brokerid":3000,"timestamp":"%d","kraftControllerEpoch":5}`, ts)
	}
	if _, err := w.Conn().Create(ctrl, kraft(1), 0, openACL); err != nil {
		t.Fatal(err)
	}
	sn := elect.SingleNode{Format: ident.Kafka} // no epoch path
	first := observeSingle(t, obs, ctrl, sn)
	snap := expect(t, first.Observer, elect.Snapshot, ownerIs("3000"))
	if _, err := w.Conn().Set(ctrl, kraft(2), -1); err != nil { // the same controller and KRaft epoch
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if sv, ok := first.Leader(); ok && sv.Identity.Fields["timestamp"] == "2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the observer did not read the write of /controller")
		}
		time.Sleep(20 * time.Millisecond)
	}
	last, ok := first.Last()
	if !ok {
		t.Fatal("no view to continue")
	}
	c := expect(t, observeSingle(t, obs, ctrl, sn, elect.Since(last)).Observer, elect.Snapshot, ownerIs("3000"))
	if c.Owner.Node != snap.Owner.Node || c.Gap || strings.Contains(c.Note, "tenure may continue") {
		t.Errorf("continued after a write the last observer read: %+v; want the tenure %s, no gap, no note that it may continue", c, snap.Owner.Node)
	}
}

// TestKRaftTenureSinceItsRegistration: a first read of a KRaft /controller
// written since the registration that made its controller dates the
// tenure from that registration (its term, the epoch node's last write),
// and so does its start: who said the term was the registration's but the
// tenure ran since the later write (an operator's set), its time.
func TestKRaftTenureSinceItsRegistration(t *testing.T) {
	addrs := sharedAddrs(t)
	w := session(t, addrs)
	chroot := groupPath(t)
	mkdirs(t, w.Conn(), chroot)
	ctrl, epoch := chroot+"/controller", chroot+"/controller_epoch"
	kraft := func(broker, epoch int) []byte {
		return fmt.Appendf(nil, `{"version":2,"brokerid":%d,"timestamp":"1","kraftControllerEpoch":%d}`, broker, epoch)
	}
	if _, err := w.Conn().Multi(
		&zk.CreateRequest{Path: epoch, Data: []byte("4"), Acl: openACL},
		&zk.CreateRequest{Path: ctrl, Data: kraft(3000, 5), Acl: openACL},
	); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // mtimes apart (milliseconds)
	// Controller 3001 registers over it: both nodes in one transaction.
	if _, err := w.Conn().Multi(
		&zk.SetDataRequest{Path: epoch, Data: []byte("5"), Version: -1},
		&zk.SetDataRequest{Path: ctrl, Data: kraft(3001, 6), Version: -1},
	); err != nil {
		t.Fatal(err)
	}
	_, reg, err := w.Conn().Get(ctrl)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := w.Conn().Set(ctrl, kraft(3001, 6), -1); err != nil { // the same bytes again
		t.Fatal(err)
	}
	sv, err := elect.ReadSingle(ctxT(t, 10*time.Second), w, ctrl, elect.SingleNodeFor(ctrl))
	if err != nil {
		t.Fatal(err)
	}
	want := time.UnixMilli(reg.Mtime).UTC()
	if sv.Owner == nil || sv.Owner.Node != fmt.Sprintf("controller@%d", reg.Mzxid) || !sv.Since.Equal(want) {
		t.Errorf("read after a set of the same bytes: owner %+v since %v; want controller@%d since %v, its registration", sv.Owner, sv.Since, reg.Mzxid, want)
	}
}
