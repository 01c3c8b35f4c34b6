package elect_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/elect/ident"
)

// TestLeaderInParentDeletedUnseenIsGap: a parent read with no leader in
// it, where a leader then came and went and the parent was deleted before
// the next read (one transaction here; a stalled observer in life), was
// read missing with no owner change and so no gap; the parent made again
// by the next leader was proved made once, and the leader in between
// passed without a gap mark. A parent gone with nothing to tell what it
// held after the last read is a gap, unless its deletion was watched
// with the leader node's creation not: the reaped container.
func TestLeaderInParentDeletedUnseenIsGap(t *testing.T) {
	addrs, obs, op, root := parentRoot(t)
	parent := root + "/app"
	leader := parent + "/leader"
	if _, err := op.Conn().Create(parent, nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	o := observeSingle(t, obs, leader, elect.SingleNode{Format: ident.Generic})
	expect(t, o.Observer, elect.Snapshot, nilOwner)
	// c leads and goes, and its parent is deleted, all in one
	// transaction: unseen.
	c := session(t, addrs)
	inOne(t, c.Conn(), leadOp(leader, "c"), deleteOp(leader), deleteOp(parent))
	waitParentMissing(t, o)
	d := session(t, addrs)
	inOne(t, d.Conn(), makeOp(parent), leadOp(leader, "d"))
	if ch := expect(t, o.Observer, elect.OwnerChanged, ownerIs("d")); !ch.Gap {
		t.Errorf("d after c led in a parent deleted unseen: %+v; want a gap", ch)
	}
}

// TestLeaderInParentMadeAndDeletedUnseenIsGap: a parent read missing, then
// made, led in and deleted again before the next read, was read missing
// twice with nothing said; its parent's child count read afresh by the
// second read then proved the parent made once for the next leader, and
// the leader in between passed without a gap mark.
func TestLeaderInParentMadeAndDeletedUnseenIsGap(t *testing.T) {
	addrs, obs, _, root := parentRoot(t)
	parent := root + "/app"
	leader := parent + "/leader"
	o := observeSingle(t, obs, leader, elect.SingleNode{Format: ident.Generic})
	expect(t, o.Observer, elect.Snapshot, nilOwner)
	first := ancestorCount(t, o)
	c := session(t, addrs)
	inOne(t, c.Conn(), makeOp(parent), leadOp(leader, "c"), deleteOp(leader), deleteOp(parent))
	// The leader node's creation fired the observer's watch: wait for
	// the read it made, which counts two more children at the root.
	for deadline := time.Now().Add(10 * time.Second); ancestorCount(t, o) == first; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the observer never read the parent's making and deletion")
		}
	}
	d := session(t, addrs)
	inOne(t, d.Conn(), makeOp(parent), leadOp(leader, "d"))
	if ch := expect(t, o.Observer, elect.OwnerChanged, ownerIs("d")); !ch.Gap {
		t.Errorf("d after c led in a parent made and deleted unseen: %+v; want a gap", ch)
	}
}

// waitParentMissing waits until o has read the leader's parent missing.
func waitParentMissing(t *testing.T, o singleSource) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if sv, ok := o.Leader(); ok && !sv.ParentExists {
			return
		}
	}
	t.Fatal("the observer never read the parent missing")
}

// ancestorCount is the count of children made at the missing parent's
// nearest ancestor that o's last read holds.
func ancestorCount(t *testing.T, o singleSource) int32 {
	t.Helper()
	sv, ok := o.Leader()
	cv, known := elect.AncestorCount(sv)
	if !ok || sv.ParentExists || !known {
		t.Fatalf("the observer's read holds no count of the missing parent's makings: %+v", sv)
	}
	return cv
}

// TestReportedLeaderWhoseParentWentIsGap: a bridge restarted on its audit
// log knows the last leader reported and the zxid it was reported at
// (AfterOwner). The leader's parent read missing since had no zxid to
// compare (its counters went with it), so the reported leader's end came
// with no gap mark though another may have led and gone before the parent
// was deleted, and the next leader, in a parent made once, came with none
// either.
func TestReportedLeaderWhoseParentWentIsGap(t *testing.T) {
	addrs, obs, op, root := parentRoot(t)
	parent := root + "/app"
	leader := parent + "/leader"
	if _, err := op.Conn().Create(parent, nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	a := session(t, addrs)
	if _, err := a.Conn().Create(leader, []byte("a"), zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	first := expect(t, observeSingle(t, obs, leader, elect.SingleNode{Format: ident.Generic}).Observer, elect.Snapshot, ownerIs("a"))
	_ = a.Close()
	// b leads and goes, and the parent is deleted, while no bridge runs.
	b := session(t, addrs)
	inOne(t, b.Conn(), leadOp(leader, "b"), deleteOp(leader), deleteOp(parent))
	after := observeSingle(t, obs, leader, elect.SingleNode{Format: ident.Generic}, elect.AfterOwner(first.Owner.Node, first.Zxid))
	if c := expect(t, after.Observer, elect.Snapshot, nilOwner); !c.Gap {
		t.Errorf("a's end, its parent gone, told with no gap mark though b led in between: %+v", c)
	}
}

// TestSinceAParentMissingCountsItsMakings: an observer continuing from
// another's last view (Since) of a leader whose parent was missing had no
// count of the parent's makings to compare: a parent made, led in and
// deleted in between was read missing again with nothing said, and its
// next making proved made once from there. The view keeps that count
// now: a parent made just once since is no gap, one made, led in and
// deleted is.
func TestSinceAParentMissingCountsItsMakings(t *testing.T) {
	addrs, obs, op, root := parentRoot(t)
	t.Run("made and deleted", func(t *testing.T) {
		parent := root + "/gone"
		leader := parent + "/leader"
		last := lastMissing(t, obs, leader)
		inOne(t, op.Conn(), makeOp(parent), leadOp(leader, "c"), deleteOp(leader), deleteOp(parent))
		since := observeSingle(t, obs, leader, elect.SingleNode{Format: ident.Generic}, elect.Since(last))
		if c := expect(t, since.Observer, elect.Snapshot, nilOwner); !c.Gap {
			t.Errorf("c led in a parent made and deleted since the last view, yet: %+v; want a gap", c)
		}
	})
	t.Run("still missing, a sibling made", func(t *testing.T) {
		// Its own making and deletion move the count by two: one more
		// child is another's (HDFS's next nameservice formatted), and
		// was a gap though nothing went unseen.
		leader := root + "/unformatted/leader"
		last := lastMissing(t, obs, leader)
		if _, err := op.Conn().Create(root+"/formatted", nil, 0, openACL); err != nil {
			t.Fatal(err)
		}
		since := observeSingle(t, obs, leader, elect.SingleNode{Format: ident.Generic}, elect.Since(last))
		if c := expect(t, since.Observer, elect.Snapshot, nilOwner); c.Gap {
			t.Errorf("its parent still missing, a sibling of it made since the last view: %+v; want no gap", c)
		}
	})
	t.Run("made once", func(t *testing.T) {
		parent := root + "/once"
		leader := parent + "/leader"
		last := lastMissing(t, obs, leader)
		d := session(t, addrs)
		inOne(t, d.Conn(), makeOp(parent), leadOp(leader, "d"))
		since := observeSingle(t, obs, leader, elect.SingleNode{Format: ident.Generic}, elect.Since(last))
		if c := expect(t, since.Observer, elect.Snapshot, ownerIs("d")); c.Gap {
			t.Errorf("d, the first leader in a parent made once since the last view: %+v; want no gap", c)
		}
	})
}

// lastMissing is the last view of an observer that read leader's parent
// missing, stopped.
func lastMissing(t *testing.T, s *elect.Session, leader string) elect.View {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	o, err := elect.ObserveSingle(ctx, s, leader, elect.SingleNode{Format: ident.Generic})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, o.Observer, elect.Snapshot, nilOwner)
	cancel()
	o.Wait()
	last, ok := o.Last()
	if !ok || last.Exists {
		t.Fatalf("the first observer's last view: %+v, %v; want its parent missing", last, ok)
	}
	return last
}

// parentRoot is a fresh root made on the shared ensemble for a leader's
// parent to come and go in, with the ensemble's addresses and two
// sessions: an observer's and an operator's.
func parentRoot(t *testing.T) (addrs []string, obs, op *elect.Session, root string) {
	t.Helper()
	addrs = sharedAddrs(t)
	obs, op = session(t, addrs), session(t, addrs)
	root = groupPath(t)
	mkdirs(t, op.Conn(), root)
	return addrs, obs, op, root
}

// inOne runs ops as one transaction on c: what it does, no read between
// sees.
func inOne(t *testing.T, c *zk.Conn, ops ...any) {
	t.Helper()
	if _, err := c.Multi(ops...); err != nil {
		t.Fatal(err)
	}
}

// makeOp makes p, a plain node, in a transaction.
func makeOp(p string) any { return &zk.CreateRequest{Path: p, Acl: openACL} }

// leadOp makes leader, ephemeral, holding id, in a transaction.
func leadOp(leader, id string) any {
	return &zk.CreateRequest{Path: leader, Data: []byte(id), Acl: openACL, Flags: zk.FlagEphemeral}
}

// deleteOp deletes p, whatever its version, in a transaction.
func deleteOp(p string) any { return &zk.DeleteRequest{Path: p, Version: -1} }
