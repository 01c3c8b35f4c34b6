package elect_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/elect/ident"
)

// TestTruncatedNameNodeRecordIsNotYARNs: a NameNode's ActiveNodeInfo cut
// after its namenodeId holds the same bytes as a YARN ResourceManager's
// ActiveRMInfoProto{clusterId, rmId}, and was read as one: NameNode nn1
// published as ResourceManager nn1 of a YARN cluster called by the
// nameservice, in the lock and in the breadcrumb alike. Under HDFS's parent
// (/hadoop-ha) such data is unreadable, said with the node's path; a
// ResourceManager's record under YARN's parent still reads as YARN's.
func TestTruncatedNameNodeRecordIsNotYARNs(t *testing.T) {
	addrs := sharedAddrs(t)
	zkfc := session(t, addrs)
	root := groupPath(t)
	ns := root + "/hadoop-ha/ns1"
	mkdirs(t, zkfc.Conn(), ns)
	full := activeNodeInfoData("ns1", "nn1", "nn1.example.com", 8020, 8019)
	cut := full[:2*(2+len("ns1"))] // tags, lengths and the first two fields
	lock, crumb := ns+"/ActiveStandbyElectorLock", ns+"/ActiveBreadCrumb"
	if _, err := zkfc.Conn().Multi(
		&zk.CreateRequest{Path: lock, Data: cut, Acl: openACL, Flags: zk.FlagEphemeral},
		&zk.CreateRequest{Path: crumb, Data: cut, Acl: openACL},
	); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{lock, crumb} {
		sv, err := elect.ReadSingle(ctxT(t, 10*time.Second), zkfc, p, elect.SingleNodeFor(p))
		if err != nil {
			t.Fatal(err)
		}
		if sv.Identity.Format == ident.YarnRM || !errors.Is(sv.DecodeErr, ident.ErrMalformed) ||
			!strings.Contains(sv.DecodeErr.Error(), p) || !strings.Contains(sv.DecodeErr.Error(), "unreadable") {
			t.Errorf("%s, a NameNode's record cut after nn1: identity %+v, %v; want it unreadable, naming the path", p, sv.Identity, sv.DecodeErr)
		}
	}
	if sv, _ := elect.ReadSingle(ctxT(t, 10*time.Second), zkfc, lock, elect.SingleNodeFor(lock)); sv.Owner == nil || !strings.Contains(sv.Note(), "unreadable") {
		t.Errorf("the lock's owner %+v, note %q; want an owner whose note says its data is unreadable", sv.Owner, sv.Note())
	}
	// A ResourceManager's record (ActiveRMInfoProto{c1, rm1}) where YARN
	// keeps it reads as a ResourceManager's.
	yarn := root + "/yarn-leader-election/c1"
	mkdirs(t, zkfc.Conn(), yarn)
	var rm []byte
	for i, s := range []string{"c1", "rm1"} {
		rm = protowire.AppendTag(rm, protowire.Number(i+1), protowire.BytesType)
		rm = protowire.AppendString(rm, s)
	}
	if _, err := zkfc.Conn().Create(yarn+"/ActiveStandbyElectorLock", rm, zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	sv, err := elect.ReadSingle(ctxT(t, 10*time.Second), zkfc, yarn+"/ActiveStandbyElectorLock", elect.SingleNode{Format: ident.HadoopHA})
	if err != nil || sv.Identity.Format != ident.YarnRM || sv.Owner == nil || sv.Owner.ID != "rm1" || sv.DecodeErr != nil {
		t.Errorf("a ResourceManager's lock read as hadoop-ha: %+v, owner %+v, %v, %v; want YARN's rm1", sv.Identity, sv.Owner, sv.DecodeErr, err)
	}
}
