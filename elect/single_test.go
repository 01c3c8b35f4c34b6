package elect_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/elect/ident"
)

// The leader nodes below are written byte for byte as each system writes
// them, on raw sessions of their own (the "brokers", "masters", ZKFCs):
// Kafka's JSON in one multi with the epoch, HBase's metadata + PBUF +
// protobuf, Hadoop's raw protobuf, built with protobuf's wire encoder from
// the .proto definitions, not with herald's decoders.

var openACL = zk.WorldACL(zk.PermAll)

func mkdirs(t *testing.T, c *zk.Conn, p string) {
	t.Helper()
	cur := ""
	for _, part := range splitPath(p) {
		cur += "/" + part
		if _, err := c.Create(cur, nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", cur, err)
		}
	}
}

func splitPath(p string) []string {
	var out []string
	for p != "/" && p != "." && p != "" {
		out = append([]string{path.Base(p)}, out...)
		p = path.Dir(p)
	}
	return out
}

// kafkaControllerData is ControllerZNode.encode (ZkData.scala), version 2.
func kafkaControllerData(broker int) []byte {
	return fmt.Appendf(nil, `{"version":2,"brokerid":%d,"timestamp":"%d","kraftControllerEpoch":-1}`, broker, time.Now().UnixMilli())
}

// kafkaElect does what KafkaZkClient.registerControllerAndIncrementControllerEpoch
// does: read /controller_epoch (creating it with 0 the first time), then
// in one multi create the EPHEMERAL /controller and set the epoch to
// epoch+1 at the version read.
func kafkaElect(t *testing.T, c *zk.Conn, chroot string, broker int) int64 {
	t.Helper()
	epochPath := chroot + "/controller_epoch"
	data, st, err := c.Get(epochPath)
	if errors.Is(err, zk.ErrNoNode) {
		if _, err := c.Create(epochPath, []byte("0"), 0, openACL); err != nil {
			t.Fatal(err)
		}
		data, st, err = c.Get(epochPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	epoch, _ := strconv.ParseInt(string(data), 10, 64)
	_, err = c.Multi(
		&zk.CreateRequest{Path: chroot + "/controller", Data: kafkaControllerData(broker), Acl: openACL, Flags: zk.FlagEphemeral},
		&zk.SetDataRequest{Path: epochPath, Data: []byte(strconv.FormatInt(epoch+1, 10)), Version: st.Version},
	)
	if err != nil {
		t.Fatalf("broker %d: elect: %v", broker, err)
	}
	return epoch + 1
}

// hbaseMasterData is MasterAddressTracker.toByteArray stored through
// RecoverableZooKeeper: 0xFF, int32 BE length of id+salt, the process
// identifier, 8 bytes of salt, "PBUF", Master{ServerName, rpc_version,
// info_port}.
func hbaseMasterData(host string, port uint32, startCode uint64) []byte {
	var sn []byte
	sn = protowire.AppendTag(sn, 1, protowire.BytesType)
	sn = protowire.AppendString(sn, host)
	sn = protowire.AppendTag(sn, 2, protowire.VarintType)
	sn = protowire.AppendVarint(sn, uint64(port))
	sn = protowire.AppendTag(sn, 3, protowire.VarintType)
	sn = protowire.AppendVarint(sn, startCode)
	var m []byte
	m = protowire.AppendTag(m, 1, protowire.BytesType)
	m = protowire.AppendBytes(m, sn)
	m = protowire.AppendTag(m, 2, protowire.VarintType)
	m = protowire.AppendVarint(m, 0)
	m = protowire.AppendTag(m, 3, protowire.VarintType)
	m = protowire.AppendVarint(m, 16010)
	id := []byte("master:16000-0x" + strconv.FormatUint(startCode, 16))
	out := []byte{0xFF}
	out = binary.BigEndian.AppendUint32(out, uint32(len(id)+8))
	out = append(out, id...)
	out = append(out, 1, 2, 3, 4, 5, 6, 7, 8)
	out = append(out, "PBUF"...)
	return append(out, m...)
}

// activeNodeInfoData is DFSZKFailoverController.targetToData.
func activeNodeInfoData(ns, nn, host string, port, zkfc int32) []byte {
	var b []byte
	for i, s := range []string{ns, nn, host} {
		b = protowire.AppendTag(b, protowire.Number(i+1), protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	b = protowire.AppendTag(b, 4, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(port))
	b = protowire.AppendTag(b, 5, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(zkfc))
}

// singleSource is a single-node leader's observation as the tests read
// it: an ObserveSingle observer, or (under TestManySingle) one leader of
// a Many.
type singleSource struct {
	Observer source
	Leader   func() (elect.SingleView, bool)
	Last     func() (elect.View, bool)
}

func observeSingle(t *testing.T, s *elect.Session, p string, sn elect.SingleNode, opts ...elect.ObserveOption) singleSource {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if strings.HasPrefix(t.Name(), "TestManySingle/") {
		m, err := elect.ObserveMany(ctx, s, elect.Workers(4))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.AddSingle(p, sn, opts...); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); <-m.Done() })
		return singleSource{Observer: m, Leader: func() (elect.SingleView, bool) { return m.Leader(p) }, Last: func() (elect.View, bool) { return m.Last(p) }}
	}
	o, err := elect.ObserveSingle(ctx, s, p, sn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); o.Wait() })
	return singleSource{Observer: o.Observer, Leader: o.Leader, Last: o.Last}
}

// TestManySingle runs the single-node leader tests through
// Many.AddSingle: turns on a shared pool must tell every story exactly as
// an observer of its own does.
func TestManySingle(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"KafkaController", TestSingleKafkaController},
		{"HBaseMasterExpiry", TestSingleHBaseMasterExpiry},
		{"MalformedData", TestSingleMalformedData},
		{"ConnectionLoss", TestSingleConnectionLoss},
		{"SinceAndAfterOwner", TestSingleSinceAndAfterOwner},
		{"RewrittenNodeAndRecipe", TestSingleRewrittenNodeAndRecipe},
		{"KafkaEpochWrittenAfter", TestKafkaEpochWrittenAfterTheController},
		{"KafkaEpochSetByAnOperator", TestKafkaEpochSetByAnOperator},
		{"OldKafkaFirstEpochIsNoGap", TestOldKafkaFirstEpochIsNoGap},
		{"KafkaEpochNodeMadeAgainIsAGap", TestKafkaEpochNodeMadeAgainIsAGap},
		{"NodeNotTakenForALeaderIsNoGap", TestNodeNotTakenForALeaderIsNoGap},
		{"KRaftControllerWrittenAgainKeepsItsTenure", TestKRaftControllerWrittenAgainKeepsItsTenure},
		{"KafkaEpochHiddenByItsACL", TestKafkaEpochHiddenByItsACL},
		{"RewrittenLeaderDatedByItsWrite", TestRewrittenLeaderDatedByItsWrite},
		{"HadoopBreadCrumbIsNoGap", TestHadoopBreadCrumbIsNoGap},
		{"OperatorSetKeepsTheTenure", TestOperatorSetKeepsTheTenure},
		{"NodeNotTakenForALeaderSaysWhy", TestANodeNotTakenForALeaderSaysWhy},
		{"RestoredLeaderDataKeepsTheTenure", TestRestoredLeaderDataKeepsTheTenure},
		{"ParentMadeAgainBetweenReads", TestParentMadeAgainBetweenReads},
		{"ParentReapedWhileEmptyIsNoGap", TestParentReapedWhileEmptyIsNoGap},
		{"LeaderOnAPathNeverMadeIsNoGap", TestLeaderOnAPathNeverMadeIsNoGap},
		{"LeaderInParentDeletedUnseenIsGap", TestLeaderInParentDeletedUnseenIsGap},
		{"LeaderInParentMadeAndDeletedUnseenIsGap", TestLeaderInParentMadeAndDeletedUnseenIsGap},
		{"ReportedLeaderWhoseParentWentIsGap", TestReportedLeaderWhoseParentWentIsGap},
		{"SinceAParentMissingCountsItsMakings", TestSinceAParentMissingCountsItsMakings},
	} {
		t.Run(tc.name, tc.f)
	}
}

func czxidOf(t *testing.T, c *zk.Conn, p string) int64 {
	t.Helper()
	_, st, err := c.Exists(p)
	if err != nil || st == nil {
		t.Fatalf("stat %s: %v", p, err)
	}
	return st.Czxid
}

// A Kafka controller: nobody, then broker 1 elected with epoch 1, its
// session gone, broker 2, then two elections in one transaction (an
// owner that came and went unseen: the epoch says so).
func TestSingleKafkaController(t *testing.T) {
	addrs := sharedAddrs(t)
	obs := session(t, addrs)
	chroot := groupPath(t)
	mkdirs(t, obs.Conn(), chroot)
	ctrl := chroot + "/controller"
	o := observeSingle(t, obs, ctrl, elect.SingleNodeFor(ctrl))

	snap := expect(t, o.Observer, elect.Snapshot, nil)
	if snap.Owner != nil || snap.Recipe != elect.RecipeElection || snap.Gap {
		t.Fatalf("snapshot before any controller: %+v", snap)
	}

	b1 := session(t, addrs)
	if e := kafkaElect(t, b1.Conn(), chroot, 1); e != 1 {
		t.Fatalf("epoch %d, want 1", e)
	}
	won := expect(t, o.Observer, elect.OwnerChanged, ownerIs("1"))
	term := czxidOf(t, obs.Conn(), ctrl)
	if won.Previous != nil || won.Gap || won.Owner.Czxid != term || won.Owner.Session != b1.ID() || won.Owner.Node != "controller@"+strconv.FormatInt(term, 10) {
		t.Fatalf("broker 1 elected: %+v, want term %d, session 0x%x", won, term, b1.ID())
	}
	if l, ok := o.Leader(); !ok || !l.EpochKnown || l.Epoch != 1 || l.Identity.Fields["broker_id"] != "1" || l.Identity.Fields["version"] != "2" {
		t.Fatalf("Leader() = %+v, %v; want epoch 1, broker 1", l, ok)
	}
	if v, ok := o.Last(); !ok || v.Owner == nil || v.Owner.ID != "1" {
		t.Fatalf("Last() = %+v, %v", v, ok)
	}
	// The same from a one-shot read.
	sv, err := elect.ReadSingle(ctxT(t, 10*time.Second), obs, ctrl, elect.SingleNodeFor(ctrl))
	if err != nil || sv.Owner == nil || sv.Owner.ID != "1" || sv.Epoch != 1 || !sv.EpochKnown || sv.Since.IsZero() {
		t.Fatalf("ReadSingle = %+v, %v", sv, err)
	}

	_ = b1.Close() // the controller's session ends: its node goes
	lost := expect(t, o.Observer, elect.OwnerChanged, nil)
	if lost.Owner != nil || lost.Previous == nil || lost.Previous.ID != "1" || lost.Reason != elect.ReasonUnknown || lost.Gap {
		t.Fatalf("broker 1 gone: %+v", lost)
	}

	b2 := session(t, addrs)
	kafkaElect(t, b2.Conn(), chroot, 2)
	if c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("2")); c.Gap || c.Owner.Czxid <= term {
		t.Fatalf("broker 2 elected: %+v", c)
	}
	if l, _ := o.Leader(); l.Epoch != 2 {
		t.Fatalf("epoch %d, want 2", l.Epoch)
	}
	_ = b2.Close()
	expect(t, o.Observer, elect.OwnerChanged, func(c elect.Change) error {
		if c.Owner != nil || c.Previous == nil || c.Previous.ID != "2" {
			return errors.New("want broker 2 gone")
		}
		return nil
	})

	// Broker 3 elected and gone, broker 4 elected, in one transaction.
	b4 := session(t, addrs)
	_, st, err := b4.Conn().Get(chroot + "/controller_epoch")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b4.Conn().Multi(
		&zk.CreateRequest{Path: ctrl, Data: kafkaControllerData(3), Acl: openACL, Flags: zk.FlagEphemeral},
		&zk.SetDataRequest{Path: chroot + "/controller_epoch", Data: []byte("3"), Version: st.Version},
		&zk.DeleteRequest{Path: ctrl, Version: -1},
		&zk.CreateRequest{Path: ctrl, Data: kafkaControllerData(4), Acl: openACL, Flags: zk.FlagEphemeral},
		&zk.SetDataRequest{Path: chroot + "/controller_epoch", Data: []byte("4"), Version: st.Version + 1},
	)
	if err != nil {
		t.Fatal(err)
	}
	if c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("4")); !c.Gap || c.Previous != nil {
		t.Fatalf("broker 3's tenure passed unseen, yet: %+v", c)
	}
	if l, _ := o.Leader(); l.Epoch != 4 {
		t.Fatalf("epoch %d, want 4", l.Epoch)
	}
}

// HBase's master, its session expiring (the holder partitioned away), a
// backup master taking over; a replacement within one transaction is
// caught by the parent's child version (HBase keeps no epoch).
func TestSingleHBaseMasterExpiry(t *testing.T) {
	addrs := sharedAddrs(t)
	obs := session(t, addrs)
	parent := groupPath(t) + "/hbase"
	mkdirs(t, obs.Conn(), parent)
	master := parent + "/master"

	p := proxyTo(t, addrs[0])
	const timeout = 2 * time.Second
	hm1 := session(t, []string{p.Addr()}, elect.WithSessionTimeout(timeout))
	if _, err := hm1.Conn().Create(master, hbaseMasterData("hm1.example.com", 16000, 1732380000001), zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	var fallbacks sync.Map
	sn := elect.SingleNode{Format: ident.HBase, OnFallback: func(p string, err error) { fallbacks.Store(p, err) }}
	o := observeSingle(t, obs, master, sn)
	snap := expect(t, o.Observer, elect.Snapshot, ownerIs("hm1.example.com,16000,1732380000001"))
	if snap.Gap || snap.Owner.Session != hm1.ID() || len(snap.Queue) != 1 {
		t.Fatalf("snapshot: %+v", snap)
	}
	if l, _ := o.Leader(); l.Identity.Fields["host"] != "hm1.example.com" || l.Identity.Fields["info_port"] != "16010" || l.EpochKnown {
		t.Fatalf("identity %+v", l.Identity)
	}

	p.Blackhole(true) // hm1 cut off: the servers expire its session
	lost := expect(t, o.Observer, elect.OwnerChanged, nil)
	if lost.Owner != nil || lost.Previous == nil || lost.Previous.Session != hm1.ID() || lost.Reason != elect.ReasonUnknown {
		t.Fatalf("hm1 expired: %+v", lost)
	}

	hm2 := session(t, addrs)
	if _, err := hm2.Conn().Create(master, hbaseMasterData("hm2.example.com", 16000, 1732380000002), zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	if c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("hm2.example.com,16000,1732380000002")); c.Gap || c.Previous != nil {
		t.Fatalf("hm2 took over: %+v", c)
	}
	// hm2 replaced by hm3 through an hm4 nobody saw, in one transaction.
	hm3 := session(t, addrs)
	if _, err := hm3.Conn().Multi(
		&zk.DeleteRequest{Path: master, Version: -1},
		&zk.CreateRequest{Path: master, Data: hbaseMasterData("hm4.example.com", 16000, 4), Acl: openACL, Flags: zk.FlagEphemeral},
		&zk.DeleteRequest{Path: master, Version: -1},
		&zk.CreateRequest{Path: master, Data: hbaseMasterData("hm3.example.com", 16000, 3), Acl: openACL, Flags: zk.FlagEphemeral},
	); err != nil {
		t.Fatal(err)
	}
	c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("hm3.example.com,16000,3"))
	if !c.Gap || c.Previous == nil || c.Previous.ID != "hm2.example.com,16000,1732380000002" {
		t.Fatalf("hm4's tenure passed unseen, yet: %+v", c)
	}
	fallbacks.Range(func(k, v any) bool { t.Errorf("fallback for %v: %v", k, v); return true })
}

// Malformed data never stops the observer: the owner's ID is the
// generic form, the fallback is reported once per owner.
func TestSingleMalformedData(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, w := session(t, addrs), session(t, addrs)
	parent := groupPath(t) + "/hadoop-ha/ns1"
	mkdirs(t, obs.Conn(), parent)
	lock := parent + "/ActiveStandbyElectorLock"
	if _, err := w.Conn().Create(lock, []byte("\x0a\x03ns1\x12"), zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var errs []error
	sn := elect.SingleNode{OnFallback: func(_ string, err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }}
	o := observeSingle(t, obs, lock, sn)
	snap := expect(t, o.Observer, elect.Snapshot, ownerIs("0x0a036e733112"))
	if l, _ := o.Leader(); !l.Identity.Fallback || !errors.Is(l.DecodeErr, ident.ErrMalformed) {
		t.Fatalf("leader %+v: want a fallback", l)
	}
	// The events say so: the raw data used to be published as the id,
	// with nothing saying it was not the system's name of its leader; and
	// say how, these bytes not being text (the note said "as text" of hex).
	if !strings.Contains(snap.Note, "its data is not as its system writes it") || !strings.Contains(snap.Note, "the id is that data, in hex") {
		t.Errorf("the snapshot of a leader whose data does not decode notes %q; want it to say the id is the raw data, in hex", snap.Note)
	}
	// A good NameNode replaces it.
	if _, err := w.Conn().Multi(
		&zk.DeleteRequest{Path: lock, Version: -1},
		&zk.CreateRequest{Path: lock, Data: activeNodeInfoData("ns1", "nn2", "nn2.example.com", 8020, 8019), Acl: openACL, Flags: zk.FlagEphemeral},
	); err != nil {
		t.Fatal(err)
	}
	if c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("nn2")); c.Gap {
		t.Fatalf("nn2: %+v", c)
	}
	if l, _ := o.Leader(); l.Identity.Fields["nameservice"] != "ns1" || l.Identity.Fields["zkfc_port"] != "8019" {
		t.Fatalf("nn2 identity %+v", l.Identity)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 1 {
		t.Fatalf("fallbacks reported %d times (%v), want once", len(errs), errs)
	}
}

// The observer's own connection lost: Unknown, then a fresh Snapshot once
// back; an owner that came and went meanwhile makes it say Gap.
func TestSingleConnectionLoss(t *testing.T) {
	addrs := sharedAddrs(t)
	p := proxyTo(t, addrs[0])
	obs := session(t, []string{p.Addr()}, elect.WithSessionTimeout(8*time.Second))
	w := session(t, addrs)
	parent := groupPath(t)
	mkdirs(t, w.Conn(), parent)
	leader := parent + "/loadbalance/leader"
	mkdirs(t, w.Conn(), path.Dir(leader))
	pulsar := func(n int) []byte {
		return fmt.Appendf(nil, `{"brokerId":"broker-%d:8080","serviceUrl":"http://broker-%d:8080"}`, n, n)
	}
	if _, err := w.Conn().Create(leader, pulsar(1), zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	o := observeSingle(t, obs, leader, elect.SingleNodeFor(leader))
	expect(t, o.Observer, elect.Snapshot, ownerIs("broker-1:8080"))
	// A sync the leader answers after the read is what vouches for it
	// (one every eighth of the timeout).
	time.Sleep(8*time.Second/8 + 300*time.Millisecond)

	cut := time.Now()
	p.Refuse(true)
	p.Cut()
	expect(t, o.Observer, elect.Unknown, nil)
	// Meanwhile broker 2 leads and goes, and broker 3 leads.
	for _, n := range []int{2, 3} {
		if _, err := w.Conn().Multi(
			&zk.DeleteRequest{Path: leader, Version: -1},
			&zk.CreateRequest{Path: leader, Data: pulsar(n), Acl: openACL, Flags: zk.FlagEphemeral},
		); err != nil {
			t.Fatal(err)
		}
	}
	p.Refuse(false)
	c := expect(t, o.Observer, elect.Snapshot, ownerIs("broker-3:8080"))
	if !c.Gap {
		t.Fatalf("broker 2 led unseen, yet: %+v", c)
	}
	if c.Before == nil || c.Before.ID != "broker-1:8080" || c.BeforeHeld.Before(began) || c.BeforeHeld.After(cut) {
		t.Fatalf("snapshot after the cut names %+v as last seen at %v; want broker 1, between %v and %v", c.Before, c.BeforeHeld, began, cut)
	}
	// Lost again with nothing changed: the same owner, no gap.
	p.Cut()
	expect(t, o.Observer, elect.Unknown, nil)
	if c := expect(t, o.Observer, elect.Snapshot, ownerIs("broker-3:8080")); c.Gap {
		t.Fatalf("nothing changed, yet: %+v", c)
	}
}

// A bridge restarted on its audit log knows only the last owner node and
// zxid (AfterOwner); one restarted in-process has the last view (Since).
func TestSingleSinceAndAfterOwner(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, w := session(t, addrs), session(t, addrs)
	parent := groupPath(t) + "/overseer_elect"
	mkdirs(t, w.Conn(), parent)
	leader := parent + "/leader"
	solr := func(n int) []byte {
		return fmt.Appendf(nil, "{\n  \"id\":\"%d-10.0.0.%d:8983_solr-n_%010d\"}", 72057594037927936+n, n, n)
	}
	if _, err := w.Conn().Create(leader, solr(1), zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	o1, err := elect.ObserveSingle(ctx, obs, leader, elect.SingleNode{})
	if err != nil {
		t.Fatal(err)
	}
	first := expect(t, o1.Observer, elect.Snapshot, ownerIs("10.0.0.1:8983_solr"))
	stop()
	o1.Wait()
	last, _ := o1.Last()
	if c := expect(t, observeSingle(t, obs, leader, elect.SingleNode{}, elect.Since(last)).Observer, elect.Snapshot, nil); c.Gap {
		t.Fatalf("the same overseer throughout, yet: %+v", c)
	}
	if c := expect(t, observeSingle(t, obs, leader, elect.SingleNode{}, elect.AfterOwner(first.Owner.Node, first.Zxid)).Observer, elect.Snapshot, nil); c.Gap {
		t.Fatalf("the same overseer throughout (after owner), yet: %+v", c)
	}
	// Overseer 2 then 3 while nobody looked.
	for _, n := range []int{2, 3} {
		if _, err := w.Conn().Multi(
			&zk.DeleteRequest{Path: leader, Version: -1},
			&zk.CreateRequest{Path: leader, Data: solr(n), Acl: openACL, Flags: zk.FlagEphemeral},
		); err != nil {
			t.Fatal(err)
		}
	}
	for name, opt := range map[string]elect.ObserveOption{"since": elect.Since(last), "after owner": elect.AfterOwner(first.Owner.Node, first.Zxid)} {
		c := expect(t, observeSingle(t, obs, leader, elect.SingleNode{}, opt).Observer, elect.Snapshot, nil)
		if !c.Gap || c.Owner == nil || c.Owner.ID != "10.0.0.3:8983_solr" {
			t.Fatalf("%s: overseer 2 led unseen, yet: %+v", name, c)
		}
	}
}

// Kafka during a ZooKeeper-to-KRaft migration: /controller is persistent
// and each KRaft controller writes it again; every write is a new owner,
// and a lock recipe names the events so.
func TestSingleRewrittenNodeAndRecipe(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, w := session(t, addrs), session(t, addrs)
	chroot := groupPath(t)
	mkdirs(t, w.Conn(), chroot)
	ctrl := chroot + "/controller"
	kraft := func(id, epoch int) []byte {
		return fmt.Appendf(nil, `{"version":2,"brokerid":%d,"timestamp":"1","kraftControllerEpoch":%d}`, id, epoch)
	}
	if _, err := w.Conn().Create(ctrl, kraft(3000, 1), 0, openACL); err != nil {
		t.Fatal(err)
	}
	o := observeSingle(t, obs, ctrl, elect.SingleNode{Format: ident.Kafka}, elect.AsRecipe(elect.RecipeLock))
	snap := expect(t, o.Observer, elect.Snapshot, ownerIs("3000"))
	if snap.Owner.Session != 0 || snap.Recipe != elect.RecipeLock {
		t.Fatalf("persistent controller: %+v", snap)
	}
	if _, err := w.Conn().Set(ctrl, kraft(3001, 2), 0); err != nil {
		t.Fatal(err)
	}
	c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("3001"))
	if c.Previous == nil || c.Previous.ID != "3000" || c.Gap || c.Owner.Czxid <= snap.Owner.Czxid || c.Owner.Node == snap.Owner.Node {
		t.Fatalf("rewrite: %+v", c)
	}
	// Two writes, one seen: the data version says one was missed.
	if _, err := w.Conn().Multi(
		&zk.SetDataRequest{Path: ctrl, Data: kraft(3002, 3), Version: 1},
		&zk.SetDataRequest{Path: ctrl, Data: kraft(3003, 4), Version: 2},
	); err != nil {
		t.Fatal(err)
	}
	if c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("3003")); !c.Gap {
		t.Fatalf("3002 passed unseen, yet: %+v", c)
	}
}

// TestSingleHandMadeNodeIsNoLeader: a persistent node at a leader's path
// whose data is not its system's (made by hand), or that has children (a
// group), is no leader: observed with no owner, ReadSingle says why, and
// a real leader's ephemeral node is believed again.
func TestSingleHandMadeNodeIsNoLeader(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, w := session(t, addrs), session(t, addrs)
	root := groupPath(t)
	mkdirs(t, w.Conn(), root+"/hbase")
	master := root + "/hbase/master"
	if _, err := w.Conn().Create(master, []byte("garbage"), 0, openACL); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 10*time.Second)
	sv, err := elect.ReadSingle(ctx, obs, master, elect.SingleNode{Format: ident.HBase})
	if err != nil || sv.Owner != nil || !strings.Contains(sv.NotLeaderNode, "made by hand") {
		t.Fatalf("hand-made master: owner %+v, why %q, err %v; want no owner, saying why", sv.Owner, sv.NotLeaderNode, err)
	}
	o := observeSingle(t, obs, master, elect.SingleNode{Format: ident.HBase})
	expect(t, o.Observer, elect.Snapshot, func(c elect.Change) error {
		if c.Owner != nil {
			return fmt.Errorf("owner %+v for a node made by hand", c.Owner)
		}
		return nil
	})
	// Gone, and made by a master (ephemeral): believed, whatever its data.
	if err := w.Conn().Delete(master, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Conn().Create(master, []byte("garbage"), zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	expect(t, o.Observer, elect.OwnerChanged, func(c elect.Change) error {
		if c.Owner == nil || c.Owner.Session != w.ID() {
			return fmt.Errorf("owner %+v, want the ephemeral node's session", c.Owner)
		}
		return nil
	})

	// A Kafka controller node, decodable but with children: a group.
	ctrl := root + "/kafka/controller"
	mkdirs(t, w.Conn(), ctrl)
	if _, err := w.Conn().Set(ctrl, []byte(`{"version":1,"brokerid":7,"timestamp":"1"}`), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Conn().Create(ctrl+"/child", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	sv, err = elect.ReadSingle(ctx, obs, ctrl, elect.SingleNode{Format: ident.Kafka})
	if err != nil || sv.Owner != nil || !strings.Contains(sv.NotLeaderNode, "children") {
		t.Fatalf("controller with children: owner %+v, why %q, err %v; want no owner, saying why", sv.Owner, sv.NotLeaderNode, err)
	}
}

func TestSingleRejectsBadInput(t *testing.T) {
	s := session(t, sharedAddrs(t))
	ctx := ctxT(t, 5*time.Second)
	m, err := elect.ObserveMany(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p  string
		sn elect.SingleNode
	}{
		{"relative", elect.SingleNode{}},
		{"/", elect.SingleNode{}},
		{"/x", elect.SingleNode{Format: "nope"}},
		{"/x", elect.SingleNode{EpochPath: "bad"}},
	} {
		if o, err := elect.ObserveSingle(ctx, s, c.p, c.sn); err == nil {
			o.Wait()
			t.Errorf("ObserveSingle(%q, %+v) accepted", c.p, c.sn)
		}
		if err := m.AddSingle(c.p, c.sn); err == nil {
			t.Errorf("Many.AddSingle(%q, %+v) accepted", c.p, c.sn)
		}
	}
	p := groupPath(t) + "/leader"
	if err := m.AddSingle(p, elect.SingleNode{}); err != nil {
		t.Fatal(err)
	}
	if err := m.Add(p); err == nil {
		t.Error("Many observes a path as a group and as a single-node leader at once")
	}
	if _, err := elect.ObserveSingle(ctx, nil, "/x", elect.SingleNode{}); err == nil {
		t.Error("nil session accepted")
	}
	if _, err := elect.ReadSingle(ctx, s, "x", elect.SingleNode{}); err == nil {
		t.Error("ReadSingle accepted a relative path")
	}
	if sv, err := elect.ReadSingle(ctx, s, groupPath(t)+"/none/controller", elect.SingleNodeFor("/kafka/controller")); err != nil || sv.Owner != nil || sv.ParentExists {
		t.Errorf("ReadSingle of a missing node = %+v, %v", sv, err)
	}
}

// TestPersistentCopyIsNoLeader: a persistent node holding its system's
// own bytes is no leader either, but for a KRaft controller's /controller:
// Hadoop's ActiveBreadCrumb, which the last active NameNode's ZKFC leaves
// behind (same ActiveNodeInfo as the lock) until a new active fences it,
// and a /hbase/master copied as a persistent node. Either was read as
// owned by the node it names, while nobody held the lock.
func TestPersistentCopyIsNoLeader(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, zkfc := session(t, addrs), session(t, addrs)
	ns := groupPath(t) + "/hadoop-ha/ns1"
	mkdirs(t, zkfc.Conn(), ns)
	info := activeNodeInfoData("ns1", "nn1", "nn1.example", 8020, 8019)
	if _, err := zkfc.Conn().Multi(
		&zk.CreateRequest{Path: ns + "/ActiveStandbyElectorLock", Data: info, Acl: openACL, Flags: zk.FlagEphemeral},
		&zk.CreateRequest{Path: ns + "/ActiveBreadCrumb", Data: info, Acl: openACL},
	); err != nil {
		t.Fatal(err)
	}
	zkfc.Close() // nn1's ZKFC dies: the lock goes, the breadcrumb stays
	ctx := ctxT(t, 10*time.Second)
	sv, err := elect.ReadSingle(ctx, obs, ns+"/ActiveBreadCrumb", elect.SingleNodeFor(ns+"/ActiveBreadCrumb"))
	if err != nil || sv.Owner != nil || !strings.Contains(sv.NotLeaderNode, "ActiveStandbyElectorLock") {
		t.Errorf("breadcrumb: owner %+v, why %q, err %v; want no owner, naming the lock", sv.Owner, sv.NotLeaderNode, err)
	}
	master := path.Dir(path.Dir(ns)) + "/hbase/master"
	mkdirs(t, obs.Conn(), path.Dir(master))
	if _, err := obs.Conn().Create(master, hbaseMasterData("hm1.example", 16000, 1700000000001), 0, openACL); err != nil {
		t.Fatal(err)
	}
	sv, err = elect.ReadSingle(ctx, obs, master, elect.SingleNodeFor(master))
	if err != nil || sv.Owner != nil || !strings.Contains(sv.NotLeaderNode, "copied or made by hand") {
		t.Errorf("persistent master: owner %+v, why %q, err %v; want no owner", sv.Owner, sv.NotLeaderNode, err)
	}
	o := observeSingle(t, obs, master, elect.SingleNodeFor(master))
	expect(t, o.Observer, elect.Snapshot, func(c elect.Change) error {
		if c.Owner != nil {
			return fmt.Errorf("owner %+v for a persistent copy", c.Owner)
		}
		return nil
	})
}

// TestAGroupIsNotALeader: a queue group (Solr's overseer election, with an
// owner) observed as a single-node leader is refused, saying to watch it,
// rather than published without an owner while its queue has one. The
// library's own observer ends; Many retries it, telling OnGroupError.
func TestAGroupIsNotALeader(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, solr := session(t, addrs), session(t, addrs)
	election := groupPath(t) + "/overseer_elect/election"
	mkdirs(t, solr.Conn(), election)
	if _, err := solr.Conn().Create(election+"/72157851320451072-10.0.0.1:8983_solr-n_", nil, zk.FlagEphemeral|zk.FlagSequence, openACL); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 10*time.Second)
	o, err := elect.ObserveSingle(ctx, obs, election, elect.SingleNodeFor(election))
	if err != nil {
		t.Fatal(err)
	}
	for c := range o.Changes() {
		t.Errorf("a group observed as a leader reported %+v", c)
	}
	if err := o.Err(); !errors.Is(err, elect.ErrNotALeader) || !strings.Contains(err.Error(), "--watch "+election) {
		t.Errorf("observer ended with %v; want ErrNotALeader saying to watch it", err)
	}
	errs := make(chan error, 16)
	m, err := elect.ObserveMany(ctx, obs, elect.OnGroupError(time.Second, func(_ string, err error, _ time.Duration) {
		select {
		case errs <- err:
		default:
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AddSingle(election, elect.SingleNodeFor(election)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !errors.Is(err, elect.ErrNotALeader) {
			t.Errorf("Many: %v; want ErrNotALeader", err)
		}
	case c := <-m.Changes():
		t.Errorf("Many published %+v for a group added as a leader", c)
	case <-ctx.Done():
		t.Fatal("Many said nothing")
	}
}

// TestKafkaEpochWrittenAfterTheController: Kafka before it wrote
// /controller and /controller_epoch in one transaction created the
// controller node, then set the epoch in a write of its own. That epoch is
// the controller's: it was read as unknown (every read retried, then gave
// up), so who showed none and gaps fell back to the child counter.
func TestKafkaEpochWrittenAfterTheController(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, broker := session(t, addrs), session(t, addrs)
	chroot := groupPath(t)
	mkdirs(t, broker.Conn(), chroot)
	if _, err := broker.Conn().Create(chroot+"/controller_epoch", []byte("4"), 0, openACL); err != nil {
		t.Fatal(err)
	}
	ctrl := chroot + "/controller"
	if _, err := broker.Conn().Create(ctrl, []byte(`{"version":1,"brokerid":7,"timestamp":"1"}`), zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	if _, err := broker.Conn().Set(chroot+"/controller_epoch", []byte("5"), 0); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 10*time.Second)
	sv, err := elect.ReadSingle(ctx, obs, ctrl, elect.SingleNodeFor(ctrl))
	if err != nil || sv.Owner == nil || !sv.EpochKnown || sv.Epoch != 5 {
		t.Fatalf("read: owner %+v, epoch %d known %v, err %v; want broker 7 with epoch 5", sv.Owner, sv.Epoch, sv.EpochKnown, err)
	}
	o := observeSingle(t, obs, ctrl, elect.SingleNodeFor(ctrl))
	expect(t, o.Observer, elect.Snapshot, func(c elect.Change) error {
		if c.Owner == nil || c.Owner.ID != "7" || c.Epoch != 5 {
			return fmt.Errorf("owner %+v epoch %d; want broker 7, epoch 5", c.Owner, c.Epoch)
		}
		return nil
	})
}

// TestRewrittenLeaderDatedByItsWrite: a leader node rewritten for each new
// owner (Kafka's persistent /controller during a migration to KRaft) gets
// its new owner's term from the write, which moves no counter of the
// parent: its changes are dated by that write, not by the parent's last
// child change (which put them before their own owner's term), and a
// bridge resuming from that report sees the rewrites made meanwhile.
func TestRewrittenLeaderDatedByItsWrite(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, w := session(t, addrs), session(t, addrs)
	chroot := groupPath(t)
	mkdirs(t, w.Conn(), chroot)
	ctrl := chroot + "/controller"
	kraft := func(id, epoch int) []byte {
		return fmt.Appendf(nil, `{"version":2,"brokerid":%d,"timestamp":"1","kraftControllerEpoch":%d}`, id, epoch)
	}
	if _, err := w.Conn().Create(ctrl, kraft(3000, 1), 0, openACL); err != nil {
		t.Fatal(err)
	}
	sn := elect.SingleNode{Format: ident.Kafka}
	o := observeSingle(t, obs, ctrl, sn)
	expect(t, o.Observer, elect.Snapshot, ownerIs("3000"))
	if _, err := w.Conn().Set(ctrl, kraft(3001, 2), 0); err != nil {
		t.Fatal(err)
	}
	c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("3001"))
	if c.Zxid < c.Owner.Czxid {
		t.Fatalf("3001's change dated %d, before its own term %d", c.Zxid, c.Owner.Czxid)
	}
	// 3002 and 3003 while nobody looked: a report of 3001 says so.
	for i, id := range []int{3002, 3003} {
		if _, err := w.Conn().Set(ctrl, kraft(id, 3+i), int32(1+i)); err != nil {
			t.Fatal(err)
		}
	}
	after := observeSingle(t, obs, ctrl, sn, elect.AfterOwner(c.Owner.Node, c.Zxid))
	if s := expect(t, after.Observer, elect.Snapshot, ownerIs("3003")); !s.Gap {
		t.Fatalf("3002 led unseen, yet: %+v", s)
	}
}

// TestHadoopBreadCrumbIsNoGap: Hadoop's ZKFC keeps ActiveBreadCrumb beside
// the lock: a new active creates it (the first) and one that steps down
// gracefully deletes it. Those creates and deletes move the parent's child
// counter too, and every graceful failover was published as a gap (an
// active that came and went unseen). They are accounted for; a failover
// that went unseen still is one.
func TestHadoopBreadCrumbIsNoGap(t *testing.T) {
	addrs := sharedAddrs(t)
	obs := session(t, addrs)
	ns := groupPath(t) + "/ns1"
	mkdirs(t, obs.Conn(), ns)
	lock, crumb := ns+"/ActiveStandbyElectorLock", ns+"/ActiveBreadCrumb"
	activate := func(nn string) *elect.Session {
		zkfc := session(t, addrs)
		info := activeNodeInfoData("ns1", nn, nn+".example", 8020, 8019)
		if _, err := zkfc.Conn().Create(lock, info, zk.FlagEphemeral, openACL); err != nil {
			t.Fatal(err)
		}
		if _, err := zkfc.Conn().Create(crumb, info, 0, openACL); err != nil {
			t.Fatal(err)
		}
		return zkfc
	}
	nn1 := activate("nn1")
	o := observeSingle(t, obs, lock, elect.SingleNodeFor(lock))
	expect(t, o.Observer, elect.Snapshot, ownerIs("nn1"))
	// Graceful: nn1 deletes its breadcrumb, then quits the election.
	if err := nn1.Conn().Delete(crumb, -1); err != nil {
		t.Fatal(err)
	}
	nn1.Close()
	if c := expect(t, o.Observer, elect.OwnerChanged, nil); c.Owner != nil || c.Gap {
		t.Fatalf("nn1 stepped down: %+v; want no owner, no gap", c)
	}
	activate("nn2")
	if c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("nn2")); c.Gap {
		t.Fatalf("nn2 took over, seen: %+v; want no gap", c)
	}
	// nn3 and nn4 in one transaction: nn3's tenure passed unseen.
	nn34 := session(t, addrs)
	if _, err := nn34.Conn().Multi(
		&zk.DeleteRequest{Path: lock, Version: -1},
		&zk.CreateRequest{Path: lock, Data: activeNodeInfoData("ns1", "nn3", "h", 1, 2), Acl: openACL, Flags: zk.FlagEphemeral},
		&zk.DeleteRequest{Path: lock, Version: -1},
		&zk.CreateRequest{Path: lock, Data: activeNodeInfoData("ns1", "nn4", "h", 1, 2), Acl: openACL, Flags: zk.FlagEphemeral},
	); err != nil {
		t.Fatal(err)
	}
	if c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("nn4")); !c.Gap {
		t.Fatalf("nn3 led unseen, yet: %+v", c)
	}
}

// TestOperatorSetKeepsTheTenure: an operator's set on a leader's
// EPHEMERAL node (data its system never writes, then the right bytes
// again) is no election: it was published as the master's loss and a new
// leader named by the garbage, and back. A rewrite naming another owner
// (a KRaft controller taking over the ZooKeeper controller's node) still
// is a new owner.
func TestOperatorSetKeepsTheTenure(t *testing.T) {
	obs, hm, op, root, good := liveMaster(t)
	master := root + "/hbase/master"
	o := observeSingle(t, obs, master, elect.SingleNodeFor(master))
	snap := expect(t, o.Observer, elect.Snapshot, ownerIs("hm1.example,16000,1700000000001"))
	leaderSays := func(what string, ok func(elect.SingleView) bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			if l, _ := o.Leader(); ok(l) {
				return
			}
			if time.Now().After(deadline) {
				l, _ := o.Leader()
				t.Fatalf("%s: leader %+v", what, l)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	before, _ := o.Leader()
	time.Sleep(5 * time.Millisecond) // the set's mtime is later than the creation's
	if _, err := op.Conn().Set(master, []byte("garbage"), -1); err != nil {
		t.Fatal(err)
	}
	leaderSays("garbage read", func(l elect.SingleView) bool {
		return l.DecodeErr != nil && l.Owner != nil && l.Owner.Node == snap.Owner.Node && l.Identity.ID == snap.Owner.ID
	})
	if l, _ := o.Leader(); !strings.Contains(l.Note(), "the owner is the one it named before") {
		t.Errorf("a tenure kept through an operator's set notes %q; want it to say the owner is the one named before", l.Note())
	}
	if l, _ := o.Leader(); !l.Since.Equal(before.Since) {
		t.Errorf("the tenure kept through the set says since %v, was %v", l.Since, before.Since)
	}
	// A reader that did not see the node before the set (a bridge
	// restarted, a session made again, who): the same tenure, from the
	// node's creation, named by its session, not by the operator's text.
	// It used to be a new leader named "garbage", from the set's time.
	_, st, err := op.Conn().Get(master)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := elect.ReadSingle(ctxT(t, 10*time.Second), op, master, elect.SingleNodeFor(master))
	switch {
	case err != nil:
		t.Fatal(err)
	case fresh.Owner == nil || fresh.Owner.Node != snap.Owner.Node || fresh.Owner.Czxid != st.Czxid:
		t.Errorf("read afresh after an operator's set: owner %+v, want the master's tenure, %s", fresh.Owner, snap.Owner.Node)
	case fresh.Owner.ID == "garbage" || fresh.Owner.ID != fresh.Owner.SessionHex():
		t.Errorf("read afresh after an operator's set: owner named %q, want its session, %s", fresh.Owner.ID, fresh.Owner.SessionHex())
	case !fresh.Since.Equal(time.UnixMilli(st.Ctime).UTC()):
		t.Errorf("read afresh after an operator's set: since %v, want the node's creation, %v", fresh.Since, time.UnixMilli(st.Ctime).UTC())
	case !strings.Contains(fresh.Note(), "named by its session"):
		t.Errorf("read afresh after an operator's set: note %q; want it to say the owner is named by its session", fresh.Note())
	}
	if _, err := op.Conn().Set(master, good, -1); err != nil {
		t.Fatal(err)
	}
	leaderSays("restored", func(l elect.SingleView) bool {
		return l.DecodeErr == nil && l.Owner != nil && l.Owner.Node == snap.Owner.Node
	})
	hm.Close()
	if c := expect(t, o.Observer, elect.OwnerChanged, nil); c.Owner != nil || c.Previous == nil || c.Previous.Node != snap.Owner.Node || c.Gap {
		t.Fatalf("after the master left: %+v; want its end, no gap", c)
	}

	// Kafka: the ZooKeeper controller's node rewritten by a KRaft controller.
	kraftRewrite(t, obs, op, root)
}

// TestSingleEpochThatIsNoNumber: an operator's set of Kafka's
// /controller_epoch to text was dropped without a word: the epoch simply
// vanished from the events and from who (found by a review). The view
// now says why (EpochErr, in its Note, which events and who carry), and
// the reader reports it once per write (OnFallback), as it does a leader
// node's undecodable data.
func TestSingleEpochThatIsNoNumber(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, broker, op := session(t, addrs), session(t, addrs), session(t, addrs)
	root := groupPath(t)
	mkdirs(t, op.Conn(), root)
	ctrl, epoch := root+"/controller", root+"/controller_epoch"
	kafkaElect(t, broker.Conn(), root, 1)
	if _, err := op.Conn().Set(epoch, []byte("abc"), -1); err != nil { // the operator's set
		t.Fatal(err)
	}
	var reported []string
	sn := elect.SingleNodeFor(ctrl)
	sn.OnFallback = func(p string, err error) { reported = append(reported, p) }
	ctx := ctxT(t, 10*time.Second)
	for i := 0; i < 2; i++ {
		sv, err := elect.ReadSingle(ctx, obs, ctrl, sn)
		switch {
		case err != nil:
			t.Fatal(err)
		case sv.Owner == nil || sv.EpochKnown:
			t.Fatalf("owner %+v, epoch known %v: want broker 1, its epoch not known", sv.Owner, sv.EpochKnown)
		case !strings.Contains(sv.EpochErr, epoch+" holds data that is no epoch") || !strings.Contains(sv.Note(), "its epoch is not known"):
			t.Fatalf("epoch error %q, note %q: want both to say the epoch node holds no epoch", sv.EpochErr, sv.Note())
		}
	}
	if len(reported) == 0 || reported[0] != epoch {
		t.Errorf("reported %v, want the epoch node %s", reported, epoch)
	}
}

// TestANodeNotTakenForALeaderSaysWhy: a node at a leader's path that is
// not taken for a leader's (a persistent copy of HBase's master, as a
// restore of a ZooKeeper backup or an operator's create leaves it) was
// published as no owner without a word, while the node, naming a master,
// stood there: the events' note now says why nobody is taken to hold it,
// and the reader reports it (OnNotLeader) once per write of that node.
func TestANodeNotTakenForALeaderSaysWhy(t *testing.T) {
	obs, hm, op, root, good := liveMaster(t)
	master := root + "/hbase/master"
	var mu sync.Mutex
	var told []string
	sn := elect.SingleNodeFor(master)
	sn.OnNotLeader = func(p, why string) { mu.Lock(); told = append(told, p+": "+why); mu.Unlock() }
	o := observeSingle(t, obs, master, sn)
	if c := expect(t, o.Observer, elect.Snapshot, ownerIs("hm1.example,16000,1700000000001")); c.Note != "" {
		t.Errorf("a master's own node notes %q", c.Note)
	}
	hm.Close() // the master goes; someone puts its node back by hand
	expect(t, o.Observer, elect.OwnerChanged, nil)
	waitTold := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			got := len(told)
			mu.Unlock()
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("OnNotLeader told %d times, want %d", got, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if _, err := op.Conn().Create(master, good, 0, openACL); err != nil {
		t.Fatal(err)
	}
	waitTold(1)
	// Nobody held it before and nobody after, but why changed: the group
	// is stated afresh with its note, not left to the next snapshot.
	if c := expect(t, o.Observer, elect.Snapshot, nil); c.Owner != nil || !strings.Contains(c.Note, master+" is not taken for a leader's") {
		t.Errorf("after a persistent copy of the master appeared: owner %+v, note %q; want no owner, saying why", c.Owner, c.Note)
	}
	if _, err := op.Conn().Set(master, good, -1); err != nil { // a write, read again
		t.Fatal(err)
	}
	waitTold(2)
	// A reader that starts now (a bridge restarted) says so in its
	// snapshot, which is what its events carry.
	fresh := observeSingle(t, obs, master, sn)
	snap := expect(t, fresh.Observer, elect.Snapshot, nil)
	if snap.Owner != nil || !strings.Contains(snap.Note, master+" is not taken for a leader's") || !strings.Contains(snap.Note, "copied or made by hand") {
		t.Errorf("snapshot of a persistent copy of the master: owner %+v, note %q; want no owner, saying why", snap.Owner, snap.Note)
	}
	time.Sleep(300 * time.Millisecond) // a second report would be out by now
	mu.Lock()
	defer mu.Unlock()
	// By the first reader for the node's creation and for its write, by
	// the second for what it found.
	if len(told) != 3 {
		t.Fatalf("OnNotLeader told %d times, want 3 (each reader once per write of the node): %q", len(told), told)
	}
	for _, s := range told {
		if !strings.Contains(s, master+": ") || !strings.Contains(s, "copied or made by hand") {
			t.Errorf("OnNotLeader told %q; want the path and why", s)
		}
	}
}

// TestRestoredLeaderDataKeepsTheTenure: an operator's set on a master's
// EPHEMERAL node, then the right bytes set back, is no election: the
// observer keeps the tenure throughout. A reader that first saw the node
// after that (who, a bridge restarted on its report, a session made
// again) took the restoring write for a new tenure of the same master:
// who said since the restore, with the write's zxid for its term, and a
// restarted bridge published the master anew, with a gap, so history
// split one tenure in two. Such a reader counts the tenure from the
// node's creation, or from the write its report names (a rewrite that
// named another owner, seen by the reporter).
func TestRestoredLeaderDataKeepsTheTenure(t *testing.T) {
	obs, _, op, root, good := liveMaster(t)
	master := root + "/hbase/master"
	sn := elect.SingleNodeFor(master)
	o := observeSingle(t, obs, master, sn)
	snap := expect(t, o.Observer, elect.Snapshot, ownerIs("hm1.example,16000,1700000000001"))
	for _, data := range [][]byte{[]byte("garbage"), good} {
		if _, err := op.Conn().Set(master, data, -1); err != nil {
			t.Fatal(err)
		}
	}
	_, st, err := op.Conn().Get(master)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := elect.ReadSingle(ctxT(t, 10*time.Second), op, master, sn)
	switch {
	case err != nil:
		t.Fatal(err)
	case fresh.Owner == nil || fresh.Owner.Node != snap.Owner.Node || fresh.Owner.ID != snap.Owner.ID:
		t.Errorf("read afresh after the restore: owner %+v; want the master's tenure, %s", fresh.Owner, snap.Owner.Node)
	case !fresh.Since.Equal(time.UnixMilli(st.Ctime).UTC()):
		t.Errorf("read afresh after the restore: since %v, want the node's creation, %v", fresh.Since, time.UnixMilli(st.Ctime).UTC())
	}
	// A bridge restarted on its report of the master: the same tenure,
	// no gap.
	after := observeSingle(t, obs, master, sn, elect.AfterOwner(snap.Owner.Node, snap.Zxid))
	if c := expect(t, after.Observer, elect.Snapshot, ownerIs(snap.Owner.ID)); c.Owner.Node != snap.Owner.Node || c.Gap {
		t.Errorf("restarted on its report of %s, after the set and its restore: %+v; want the same tenure, no gap", snap.Owner.Node, c)
	}

	// A rewrite naming another owner (a KRaft controller's data over the
	// ZooKeeper controller's node) is a new owner to the observer that saw
	// it, and stays that owner to one restarted on its report.
	ctrl, c := kraftRewrite(t, obs, op, root)
	ka := observeSingle(t, obs, ctrl, elect.SingleNode{Format: ident.Kafka}, elect.AfterOwner(c.Owner.Node, c.Zxid))
	if s := expect(t, ka.Observer, elect.Snapshot, ownerIs("3000")); s.Owner.Node != c.Owner.Node || s.Gap {
		t.Errorf("restarted on its report of %s: %+v; want the same owner, no gap", c.Owner.Node, s)
	}
}

// TestRestartedReaderSeesARewriteAfterItsReport: a rewrite naming
// another owner is a new owner to the observer that saw it (here the
// ZooKeeper controller's broker named back over the one its report
// named); a reader restarted on the report from before that rewrite
// names the owner the node names now, as a new tenure from that write,
// not as the reported tenure's, which let the change of owner go unsaid.
func TestRestartedReaderSeesARewriteAfterItsReport(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, op, zkc := session(t, addrs), session(t, addrs), session(t, addrs)
	ctrl := groupPath(t) + "/controller"
	mkdirs(t, op.Conn(), path.Dir(ctrl))
	if _, err := zkc.Conn().Create(ctrl, kafkaControllerData(1), zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	sn := elect.SingleNode{Format: ident.Kafka}
	k := observeSingle(t, obs, ctrl, sn)
	expect(t, k.Observer, elect.Snapshot, ownerIs("1"))
	if _, err := op.Conn().Set(ctrl, []byte(`{"version":2,"brokerid":3000,"timestamp":"1","kraftControllerEpoch":5}`), -1); err != nil {
		t.Fatal(err)
	}
	report := expect(t, k.Observer, elect.OwnerChanged, ownerIs("3000"))
	// The reporter goes; the node is written back naming broker 1.
	if _, err := op.Conn().Set(ctrl, kafkaControllerData(1), -1); err != nil {
		t.Fatal(err)
	}
	live := expect(t, k.Observer, elect.OwnerChanged, ownerIs("1"))
	for _, o := range []elect.ObserveOption{
		elect.ReportOwnerID(report.Owner.ID),
		elect.Since(elect.View{Exists: true, Group: ctrl, Owner: report.Owner, Pzxid: report.Zxid}),
	} {
		after := observeSingle(t, obs, ctrl, sn, elect.AfterOwner(report.Owner.Node, report.Zxid), o)
		s := expect(t, after.Observer, elect.Snapshot, ownerIs("1"))
		if s.Owner.Node == report.Owner.Node || s.Owner.Node != live.Owner.Node {
			t.Errorf("restarted on its report of 3000 as %s, after a rewrite naming 1: owner 1 as %s; want a new tenure, %s, as the observer that saw the rewrite said",
				report.Owner.Node, s.Owner.Node, live.Owner.Node)
		}
	}
}

// liveMaster makes an HBase master's EPHEMERAL node, root+"/hbase/master"
// holding good, through the session hm, beside an observer's session and
// an operator's.
func liveMaster(t *testing.T) (obs, hm, op *elect.Session, root string, good []byte) {
	t.Helper()
	addrs := sharedAddrs(t)
	obs, hm, op = session(t, addrs), session(t, addrs), session(t, addrs)
	root = groupPath(t)
	mkdirs(t, hm.Conn(), root+"/hbase")
	good = hbaseMasterData("hm1.example", 16000, 1700000000001)
	if _, err := hm.Conn().Create(root+"/hbase/master", good, zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	return obs, hm, op, root, good
}

// kraftRewrite makes Kafka's ZooKeeper controller node at root, broker 1's
// EPHEMERAL one, observed by obs, then writes a KRaft controller's data
// over it through op (another owner, broker 3000), and returns the node
// and the change the observer reported for that write.
func kraftRewrite(t *testing.T, obs, op *elect.Session, root string) (string, elect.Change) {
	t.Helper()
	ctrl := root + "/controller"
	zkc := session(t, sharedAddrs(t))
	if _, err := zkc.Conn().Create(ctrl, kafkaControllerData(1), zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	k := observeSingle(t, obs, ctrl, elect.SingleNode{Format: ident.Kafka})
	expect(t, k.Observer, elect.Snapshot, ownerIs("1"))
	if _, err := op.Conn().Set(ctrl, []byte(`{"version":2,"brokerid":3000,"timestamp":"1","kraftControllerEpoch":5}`), -1); err != nil {
		t.Fatal(err)
	}
	return ctrl, expect(t, k.Observer, elect.OwnerChanged, ownerIs("3000"))
}

// TestNodeNotTakenForALeaderIsNoGap: a persistent copy of HBase's master
// put at its path by hand while nobody led, then deleted, is seen by the
// observer, each write of it: nothing passed unseen. Its create and delete
// move the parent's child counter, which counted only owners' nodes, so
// the group's restatements said Gap, and history marked tenures as
// possibly missing where none could be.
func TestNodeNotTakenForALeaderIsNoGap(t *testing.T) {
	obs, hm, op, root, good := liveMaster(t)
	master := root + "/hbase/master"
	o := observeSingle(t, obs, master, elect.SingleNodeFor(master))
	expect(t, o.Observer, elect.Snapshot, ownerIs("hm1.example,16000,1700000000001"))
	hm.Close()
	if c := expect(t, o.Observer, elect.OwnerChanged, nil); c.Gap {
		t.Fatalf("the master's end: %+v; want no gap", c)
	}
	if _, err := op.Conn().Create(master, good, 0, openACL); err != nil { // by hand
		t.Fatal(err)
	}
	if c := expect(t, o.Observer, elect.Snapshot, nil); c.Owner != nil || c.Note == "" || c.Gap {
		t.Errorf("a persistent copy of the master made by hand: %+v; want no owner, a note, no gap", c)
	}
	if err := op.Conn().Delete(master, -1); err != nil {
		t.Fatal(err)
	}
	if c := expect(t, o.Observer, elect.Snapshot, nil); c.Owner != nil || c.Note != "" || c.Gap {
		t.Errorf("the copy deleted: %+v; want no owner, no note, no gap", c)
	}
	hm2 := session(t, sharedAddrs(t))
	if _, err := hm2.Conn().Create(master, hbaseMasterData("hm2.example", 16000, 1700000000002), zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	if c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("hm2.example,16000,1700000000002")); c.Gap {
		t.Errorf("the next master: %+v; want no gap", c)
	}
	// Its node replaced by a copy in one transaction: its end, no gap.
	if _, err := op.Conn().Multi(
		&zk.DeleteRequest{Path: master, Version: -1},
		&zk.CreateRequest{Path: master, Data: good, Acl: openACL, Flags: 0},
	); err != nil {
		t.Fatal(err)
	}
	if c := expect(t, o.Observer, elect.OwnerChanged, nil); c.Owner != nil || c.Note == "" || c.Gap {
		t.Errorf("hm2's node replaced by a copy: %+v; want its end, a note, no gap", c)
	}
	// A master that came and went unseen, between two copies, still is a
	// gap, said with the next change.
	if _, err := hm2.Conn().Multi(
		&zk.DeleteRequest{Path: master, Version: -1},
		&zk.CreateRequest{Path: master, Data: hbaseMasterData("hm3.example", 16000, 3), Acl: openACL, Flags: zk.FlagEphemeral},
		&zk.DeleteRequest{Path: master, Version: -1},
		&zk.CreateRequest{Path: master, Data: good, Acl: openACL, Flags: 0},
	); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the second copy read", func() bool {
		_, st, err := obs.Conn().Exists(path.Dir(master))
		l, _ := o.Leader()
		return err == nil && st != nil && l.NotLeaderNode != "" && l.Cversion == st.Cversion
	})
	if err := op.Conn().Delete(master, -1); err != nil {
		t.Fatal(err)
	}
	if c := expect(t, o.Observer, elect.Snapshot, nil); c.Owner != nil || !c.Gap {
		t.Errorf("hm3 came and went unseen: %+v; want a gap", c)
	}
}

// TestKRaftControllerWrittenAgainKeepsItsTenure: Kafka's persistent
// /controller written again naming the same KRaft controller in the same
// KRaft epoch (an operator's set, a restore of the same bytes) was
// published as that controller's loss and a new tenure of it: KRaft elects
// one leader per epoch, so such a write is no election. A write naming
// another epoch still is one.
func TestKRaftControllerWrittenAgainKeepsItsTenure(t *testing.T) {
	addrs := sharedAddrs(t)
	obs, w := session(t, addrs), session(t, addrs)
	chroot := groupPath(t)
	mkdirs(t, w.Conn(), chroot)
	ctrl := chroot + "/controller"
	kraft := func(id, epoch int, ts string) []byte {
		return fmt.Appendf(nil, `{"version":2,"brokerid":%d,"timestamp":"%s","kraftControllerEpoch":%d}`, id, ts, epoch)
	}
	if _, err := w.Conn().Create(ctrl, kraft(3000, 5, "1"), 0, openACL); err != nil {
		t.Fatal(err)
	}
	o := observeSingle(t, obs, ctrl, elect.SingleNode{Format: ident.Kafka})
	snap := expect(t, o.Observer, elect.Snapshot, ownerIs("3000"))
	for _, ts := range []string{"1", "2"} { // the same bytes, then a new timestamp
		if _, err := w.Conn().Set(ctrl, kraft(3000, 5, ts), -1); err != nil {
			t.Fatal(err)
		}
	}
	_, st, err := w.Conn().Get(ctrl)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the writes read", func() bool {
		l, _ := o.Leader()
		return l.Identity.Fields["timestamp"] == "2"
	})
	if l, _ := o.Leader(); l.Owner == nil || l.Owner.Node != snap.Owner.Node || st.Mzxid == st.Czxid {
		t.Errorf("after writes naming the same KRaft controller and epoch: owner %+v; want the tenure %s", l.Owner, snap.Owner.Node)
	}
	if _, err := w.Conn().Set(ctrl, kraft(3000, 6, "3"), -1); err != nil { // re-elected: epoch 6
		t.Fatal(err)
	}
	c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("3000"))
	if c.Previous == nil || c.Previous.Node != snap.Owner.Node || c.Owner.Node == snap.Owner.Node || c.Gap {
		t.Errorf("the same controller in KRaft epoch 6: %+v; want a new tenure after %s, no gap", c, snap.Owner.Node)
	}
}
