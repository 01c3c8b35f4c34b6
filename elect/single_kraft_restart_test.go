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
// an election.
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
	// Without the epoch node, a restart keeps the report and says so.
	c := restarted(elect.SingleNode{Format: ident.Kafka})
	if c.Owner.Node != snap.Owner.Node || c.Gap || !strings.Contains(c.Note, "tenure may continue") {
		t.Errorf("restarted without the epoch node: %+v; want the tenure %s, no gap, a note that it may continue", c, snap.Owner.Node)
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
