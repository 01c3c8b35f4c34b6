package ident_test

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/zkherald/herald/elect/ident"
)

// The bytes below are built the way each system writes them: field by
// field with protobuf's wire encoder, in field-number order as the Java
// protobuf runtime writes them, and the JSON in the shapes the systems'
// sources produce; not with this package's own declarations.

// hbaseMaster is MasterAddressTracker.toByteArray(sn, infoPort) stored by
// RecoverableZooKeeper.create: ZKMetadata.appendMetaData(id, data), that
// is 0xFF, int32 BE (len(id)+8), id, an 8-byte salt, then "PBUF" + Master.
func hbaseMaster(zkID, host string, port uint32, startCode uint64, rpcVersion, infoPort uint32) []byte {
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
	m = protowire.AppendVarint(m, uint64(rpcVersion))
	m = protowire.AppendTag(m, 3, protowire.VarintType)
	m = protowire.AppendVarint(m, uint64(infoPort))
	data := append([]byte("PBUF"), m...)
	salt := []byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0}
	out := []byte{0xFF}
	out = binary.BigEndian.AppendUint32(out, uint32(len(zkID)+len(salt)))
	out = append(out, zkID...)
	out = append(out, salt...)
	return append(out, data...)
}

// activeNodeInfo is DFSZKFailoverController.targetToData: ActiveNodeInfo
// with every field set, no prefix.
func activeNodeInfo(ns, nn, host string, port, zkfcPort int32) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, ns)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, nn)
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	b = protowire.AppendString(b, host)
	b = protowire.AppendTag(b, 4, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(int64(port))) // int32: sign-extended varint
	b = protowire.AppendTag(b, 5, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(int64(zkfcPort)))
	return b
}

// activeRMInfo is ActiveStandbyElectorBasedElectorService's
// ActiveRMInfoProto{clusterId, rmId}.
func activeRMInfo(cluster, rm string) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, cluster)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, rm)
	return b
}

func decode(t *testing.T, f ident.Format, path string, data []byte) ident.Identity {
	t.Helper()
	id, err := ident.Decode(f, path, data)
	if err != nil {
		t.Fatalf("Decode(%s, %s, %q): %v", f, path, data, err)
	}
	if id.Fallback {
		t.Fatalf("Decode(%s, %s): fell back without an error", f, path)
	}
	return id
}

func wantFields(t *testing.T, id ident.Identity, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if id.Fields[k] != v {
			t.Errorf("%s: field %s = %q, want %q (all: %v)", id.Format, k, id.Fields[k], v, id.Fields)
		}
	}
}

func TestKafkaController(t *testing.T) {
	// ZkData.scala ControllerZNode.encode, version 2 (Kafka >= 3.4) and 1.
	v2 := []byte(`{"version":2,"brokerid":3,"timestamp":"1732380000123","kraftControllerEpoch":-1}`)
	id := decode(t, ident.Auto, "/kafka/controller", v2)
	if id.Format != ident.Kafka || id.ID != "3" {
		t.Fatalf("v2: %+v, want kafka broker 3", id)
	}
	wantFields(t, id, map[string]string{"broker_id": "3", "version": "2", "timestamp": "1732380000123", "kraft_controller_epoch": "-1"})
	if _, ok := id.Fields["controller"]; ok {
		t.Errorf("a ZooKeeper-mode controller taken for KRaft: %v", id.Fields)
	}
	v1 := []byte(`{"version":1,"brokerid":1001,"timestamp":"1500000000000"}`)
	id = decode(t, ident.Kafka, "/controller", v1)
	if id.ID != "1001" || id.Fields["version"] != "1" {
		t.Fatalf("v1: %+v", id)
	}
	// During a migration a KRaft controller writes its own epoch.
	kraft := decode(t, ident.Kafka, "/controller", []byte(`{"version":2,"brokerid":3000,"timestamp":"1","kraftControllerEpoch":5}`))
	wantFields(t, kraft, map[string]string{"controller": "kraft", "kraft_controller_epoch": "5"})

	if e, err := ident.ParseEpoch([]byte("17")); err != nil || e != 17 {
		t.Fatalf("ParseEpoch(17) = %d, %v", e, err)
	}
	if _, err := ident.ParseEpoch([]byte("x")); !errors.Is(err, ident.ErrMalformed) {
		t.Fatalf("ParseEpoch(x): %v, want ErrMalformed", err)
	}
}

func TestHBaseMaster(t *testing.T) {
	data := hbaseMaster("master:16000-0x18b2f3a4c5d60001", "hm1.example.com", 16000, 1732380000456, 0, 16010)
	id := decode(t, ident.Auto, "/hbase/master", data)
	if id.Format != ident.HBase || id.ID != "hm1.example.com,16000,1732380000456" {
		t.Fatalf("got %+v", id)
	}
	wantFields(t, id, map[string]string{"host": "hm1.example.com", "port": "16000", "start_code": "1732380000456",
		"rpc_version": "0", "info_port": "16010", "zk_identifier": "master:16000-0x18b2f3a4c5d60001"})
	// Without ZKMetadata (removeMetaData passes such data through).
	plain := data[1+4+len("master:16000-0x18b2f3a4c5d60001")+8:]
	if id := decode(t, ident.HBase, "/hbase-unsecure/master", plain); id.ID != "hm1.example.com,16000,1732380000456" {
		t.Fatalf("without metadata: %+v", id)
	}
}

func TestHadoopActiveNodeInfo(t *testing.T) {
	// Fixed bytes, as protobuf-java writes ActiveNodeInfo{"ns1", "nn1",
	// "nn1.example.com", 8020, 8019}: tags 0a 12 1a 20 28.
	golden, _ := hex.DecodeString("0a036e7331" + "12036e6e31" + "1a0f6e6e312e6578616d706c652e636f6d" + "20d43e" + "28d33e")
	if built := activeNodeInfo("ns1", "nn1", "nn1.example.com", 8020, 8019); string(built) != string(golden) {
		t.Fatalf("test's own encoder disagrees with the golden bytes:\n%x\n%x", built, golden)
	}
	id := decode(t, ident.Auto, "/hadoop-ha/ns1/ActiveStandbyElectorLock", golden)
	if id.Format != ident.HadoopHA || id.ID != "nn1" {
		t.Fatalf("got %+v", id)
	}
	wantFields(t, id, map[string]string{"nameservice": "ns1", "namenode": "nn1", "host": "nn1.example.com", "port": "8020", "zkfc_port": "8019"})
	// The breadcrumb holds the same bytes.
	if id := decode(t, ident.Auto, "/hadoop-ha/ns1/ActiveBreadCrumb", golden); id.ID != "nn1" {
		t.Fatalf("breadcrumb: %+v", id)
	}
}

func TestYarnRM(t *testing.T) {
	data := activeRMInfo("yarn-cluster", "rm2")
	id := decode(t, ident.Auto, "/yarn-leader-election/yarn-cluster/ActiveStandbyElectorLock", data)
	if id.Format != ident.YarnRM || id.ID != "rm2" {
		t.Fatalf("got %+v", id)
	}
	wantFields(t, id, map[string]string{"cluster_id": "yarn-cluster", "rm_id": "rm2"})
	// Under YARN's base path, the Hadoop decoder recognises it too.
	if id := decode(t, ident.HadoopHA, "/yarn-leader-election/yarn-cluster/ActiveStandbyElectorLock", data); id.Format != ident.YarnRM || id.ID != "rm2" {
		t.Fatalf("hadoop-ha on RM data: %+v", id)
	}
}

// TestTwoFieldHadoopRecordNamesNoSystem: a record of two text fields has
// the bytes of a YARN ActiveRMInfoProto and of an HDFS ActiveNodeInfo cut
// after its namenodeId. Under /hadoop-ha (HDFS's base path, which a YARN
// may be given too) or a path given by hand, nothing tells which system
// wrote it: it was named a ResourceManager's. The owner is field 2 under
// either reading.
func TestTwoFieldHadoopRecordNamesNoSystem(t *testing.T) {
	cut := activeNodeInfo("ns1", "nn1", "nn1.example.com", 8020, 8019)
	cut = cut[:10] // 0a 03 "ns1" 12 03 "nn1"
	if string(cut) != string(activeRMInfo("ns1", "nn1")) {
		t.Fatalf("a NameNode record cut after namenodeId %x is not the RM record's bytes %x", cut, activeRMInfo("ns1", "nn1"))
	}
	for _, p := range []string{"/hadoop-ha/ns1/ActiveStandbyElectorLock", "/custom/ns1/ActiveStandbyElectorLock"} {
		id := decode(t, ident.Auto, p, cut)
		if p == "/custom/ns1/ActiveStandbyElectorLock" {
			id = decode(t, ident.HadoopHA, p, cut)
		}
		if id.Format == ident.YarnRM || id.ID != "nn1" || !strings.HasPrefix(id.Fields["system"], "unknown") {
			t.Errorf("%s: got %+v; want owner nn1 of no named system", p, id)
		}
		wantFields(t, id, map[string]string{"system": id.Fields["system"], "nameservice_or_cluster": "ns1", "namenode_or_rm": "nn1"})
	}
	if id := decode(t, ident.Auto, "/yarn-leader-election/ns1/ActiveStandbyElectorLock", cut); id.Format != ident.YarnRM {
		t.Errorf("under YARN's base path: %+v; want a ResourceManager's", id)
	}
}

func TestSolr(t *testing.T) {
	// OverseerElectionContext: ZkNodeProps(ID, <election node>) as
	// Utils.toJSON writes it (indented).
	over := []byte("{\n  \"id\":\"72057594037927940-10.0.0.7:8983_solr-n_0000000003\"}")
	id := decode(t, ident.Auto, "/solr/overseer_elect/leader", over)
	if id.Format != ident.SolrOverseer || id.ID != "10.0.0.7:8983_solr" {
		t.Fatalf("overseer: %+v", id)
	}
	wantFields(t, id, map[string]string{"node_name": "10.0.0.7:8983_solr", "sequence": "3", "session": "0x100000000000004",
		"election_node": "72057594037927940-10.0.0.7:8983_solr-n_0000000003"})
	shard := []byte(`{
  "core":"films_shard1_replica_n1",
  "node_name":"10.0.0.7:8983_solr",
  "base_url":"http://10.0.0.7:8983/solr",
  "core_node_name":"core_node2"}`)
	id = decode(t, ident.Auto, "/collections/films/leaders/shard1/leader", shard)
	if id.Format != ident.SolrLeader || id.ID != "core_node2" {
		t.Fatalf("shard leader: %+v", id)
	}
	wantFields(t, id, map[string]string{"core": "films_shard1_replica_n1", "node_name": "10.0.0.7:8983_solr", "base_url": "http://10.0.0.7:8983/solr"})

	for name, want := range map[string]ident.SolrNode{
		"72057594037927940-10.0.0.7:8983_solr-n_0000000003": {Session: 72057594037927940, ID: "10.0.0.7:8983_solr", Sequence: 3},
		"-8070450532247928832-core_node5-n_0000000012":      {Session: -8070450532247928832, ID: "core_node5", Sequence: 12},
	} {
		if got, ok := ident.ParseSolrNode(name); !ok || got != want {
			t.Errorf("ParseSolrNode(%s) = %+v, %v; want %+v", name, got, ok, want)
		}
	}
	for _, bad := range []string{"", "n_0000000001", "abc-n_0000000001", "123-n_0000000001", "1-x-n_abc"} {
		if got, ok := ident.ParseSolrNode(bad); ok {
			t.Errorf("ParseSolrNode(%q) = %+v, want not ok", bad, got)
		}
	}
}

func TestHelixPulsarMesos(t *testing.T) {
	// Helix LiveInstance ZNRecord as ZNRecordSerializer writes it.
	helix := []byte(`{
  "id" : "controller_12918",
  "simpleFields" : {
    "HELIX_VERSION" : "1.0.4",
    "LIVE_INSTANCE" : "4711@ctrl1.example.com",
    "SESSION_ID" : "3000c1b2d3e0002"
  },
  "mapFields" : {
  },
  "listFields" : {
  }
}`)
	id := decode(t, ident.Auto, "/MYCLUSTER/CONTROLLER/LEADER", helix)
	if id.Format != ident.Helix || id.ID != "controller_12918" {
		t.Fatalf("helix: %+v", id)
	}
	wantFields(t, id, map[string]string{"helix_version": "1.0.4", "live_instance": "4711@ctrl1.example.com", "session_id": "3000c1b2d3e0002"})

	id = decode(t, ident.Auto, "/loadbalance/leader", []byte(`{"brokerId":"broker-1.example.com:8080","serviceUrl":"http://broker-1.example.com:8080"}`))
	if id.Format != ident.Pulsar || id.ID != "broker-1.example.com:8080" {
		t.Fatalf("pulsar: %+v", id)
	}
	id = decode(t, ident.Pulsar, "/loadbalance/leader", []byte(`{"serviceUrl":"http://old.example.com:8080"}`))
	if id.ID != "http://old.example.com:8080" {
		t.Fatalf("pulsar before brokerId: %+v", id)
	}

	// JSON::protobuf(MasterInfo) as the master contender writes it.
	mesos := []byte(`{"address":{"hostname":"m1.example.com","ip":"10.0.0.9","port":5050},"capabilities":[{"type":"AGENT_UPDATE"}],"hostname":"m1.example.com","id":"d2c4a3f6-0ec8-4d8a-9f0c-3b4e1d2a6f10","ip":150994954,"pid":"master@10.0.0.9:5050","port":5050,"version":"1.11.0"}`)
	id = decode(t, ident.Auto, "/mesos/json.info_0000000007", mesos)
	if id.Format != ident.Mesos || id.ID != "d2c4a3f6-0ec8-4d8a-9f0c-3b4e1d2a6f10" {
		t.Fatalf("mesos: %+v", id)
	}
	wantFields(t, id, map[string]string{"ip": "10.0.0.9", "port": "5050", "hostname": "m1.example.com", "pid": "master@10.0.0.9:5050", "version": "1.11.0"})
	// Without address, ip is a uint32 in network byte order.
	id = decode(t, ident.Mesos, "/mesos/json.info_0000000001", []byte(`{"id":"x","ip":16777343,"port":5050}`))
	wantFields(t, id, map[string]string{"ip": "127.0.0.1", "port": "5050"})
}

func TestGeneric(t *testing.T) {
	if id := decode(t, ident.Auto, "/services/web/leader", []byte("  web-3:8080\n")); id.Format != ident.Generic || id.ID != "web-3:8080" {
		t.Fatalf("text: %+v", id)
	}
	if id := decode(t, ident.Generic, "/x", []byte("0x0001fe")); id.ID != "0x0001fe" || id.Fields["encoding"] != "" {
		t.Errorf("text that looks like hex: %+v; want it as text, not said to be hex", id)
	}
	if id := decode(t, ident.Generic, "/x", []byte{0, 1, 0xfe}); id.ID != "0x0001fe" || id.Fields["encoding"] != "hex" {
		t.Fatalf("binary: %+v", id)
	}
	if id := decode(t, ident.Generic, "/x", nil); id.ID != "" || id.Fields["bytes"] != "0" {
		t.Fatalf("empty: %+v", id)
	}
	long := decode(t, ident.Generic, "/x", make([]byte, 100))
	if !strings.HasSuffix(long.ID, "…") || len(long.ID) != 2+64+len("…") || long.Fields["bytes"] != "100" {
		t.Fatalf("long binary: %+v", long)
	}
	if id := decode(t, ident.Generic, "/x", []byte(strings.Repeat("é", 300))); !strings.HasSuffix(id.ID, "…") || len([]rune(id.ID)) != 257 {
		t.Fatalf("long text: %d runes", len([]rune(id.ID)))
	}
}

// Malformed data of every format falls back to the generic form, says so,
// and never panics.
func TestMalformedFallsBack(t *testing.T) {
	good := hbaseMaster("id", "h", 1, 2, 0, 3)
	cases := []struct {
		f    ident.Format
		data []byte
	}{
		{ident.Kafka, []byte(`{"version":2,"timestamp":"1"}`)},
		{ident.Kafka, []byte(`{"brokerid":"3"}`)},
		{ident.Kafka, []byte(`{"brokerid":1e99}`)},
		{ident.Kafka, []byte(`{"brokerid":3}{"brokerid":4}`)},
		{ident.Kafka, []byte(`null`)},
		{ident.Kafka, []byte(`[1,2]`)},
		{ident.Kafka, []byte("\x00\x01")},
		{ident.HBase, good[:3]},                                    // length cut
		{ident.HBase, good[:20]},                                   // id length beyond the data
		{ident.HBase, append([]byte{0xFF, 0, 0, 0, 0}, "XBUF"...)}, // no PBUF
		{ident.HBase, append([]byte{0xFF, 0xff, 0xff, 0xff, 0xff}, good...)},
		{ident.HBase, good[:len(good)-3]},     // protobuf cut
		{ident.HBase, []byte("PBUF\x10\x05")}, // Master without its required ServerName
		{ident.HadoopHA, activeNodeInfo("ns1", "nn1", "h", 1, 2)[:12]},
		// Cut at a field's end (no zkfcPort): not a YARN RM whose cluster
		// is the nameservice, as it was read.
		{ident.HadoopHA, activeNodeInfo("ns1", "nn1", "host1", 8020, 8019)[:len(activeNodeInfo("ns1", "nn1", "host1", 8020, 8019))-3]},
		{ident.HadoopHA, []byte("not protobuf at all")},
		{ident.HadoopHA, activeNodeInfo("ns1", "nn\x01", "h", 1, 2)},
		{ident.YarnRM, activeRMInfo("c", "")},
		{ident.YarnRM, []byte{0x0a, 0x05, 'a'}},
		{ident.SolrOverseer, []byte(`{"id":7}`)},
		{ident.SolrOverseer, []byte(`{}`)},
		{ident.SolrLeader, []byte(`{"base_url":"http://x"}`)},
		{ident.Helix, []byte(`{"simpleFields":{}}`)},
		{ident.Helix, []byte(`{"id":"c","simpleFields":[1]}`)},
		{ident.Pulsar, []byte(`{"brokerId":5}`)},
		{ident.Pulsar, []byte(`{}`)},
		{ident.Mesos, []byte(`{"id":"x","ip":-1}`)},
		{ident.Mesos, []byte(`{"ip":1}`)},
		{ident.Mesos, []byte(`{"id":"x","address":"a"}`)},
	}
	for _, c := range cases {
		id, err := ident.Decode(c.f, "/p", c.data)
		if !errors.Is(err, ident.ErrMalformed) {
			t.Errorf("%s %q: err %v, want ErrMalformed", c.f, c.data, err)
		}
		if err != nil && strings.ContainsRune(err.Error(), '\u00a0') {
			t.Errorf("%s %q: err %q has a non-breaking space, which logs show as an odd character", c.f, c.data, err)
		}
		if !id.Fallback || id.Format != ident.Generic {
			t.Errorf("%s %q: %+v, want the generic form with Fallback", c.f, c.data, id)
		}
		if want := decodeGeneric(t, c.data); id.ID != want {
			t.Errorf("%s %q: id %q, want the generic %q", c.f, c.data, id.ID, want)
		}
	}
	if id, err := ident.Decode("nope", "/p", []byte("x")); err == nil || !id.Fallback || id.ID != "x" {
		t.Errorf("unknown format: %+v, %v", id, err)
	}
}

func decodeGeneric(t *testing.T, data []byte) string {
	t.Helper()
	id, err := ident.Decode(ident.Generic, "/p", data)
	if err != nil {
		t.Fatal(err)
	}
	return id.ID
}

func TestForPathAndParseFormat(t *testing.T) {
	for p, want := range map[string]ident.Format{
		"/controller":                                       ident.Kafka,
		"/kafka-prod/controller":                            ident.Kafka,
		"/hbase/master":                                     ident.HBase,
		"/hadoop-ha/ns1/ActiveStandbyElectorLock":           ident.HadoopHA,
		"/yarn-leader-election/c1/ActiveStandbyElectorLock": ident.YarnRM,
		"/overseer_elect/leader":                            ident.SolrOverseer,
		"/solr/collections/c/leaders/shard1/leader":         ident.SolrLeader,
		"/C1/CONTROLLER/LEADER":                             ident.Helix,
		"/loadbalance/leader":                               ident.Pulsar,
		"/mesos/json.info_0000000001":                       ident.Mesos,
		"/jobs/nightly":                                     ident.Generic,
		"/controller_epoch":                                 ident.Generic,
	} {
		if got := ident.ForPath(p); got != want {
			t.Errorf("ForPath(%s) = %s, want %s", p, got, want)
		}
	}
	for _, f := range ident.Formats {
		if got, err := ident.ParseFormat(string(f)); err != nil || got != f {
			t.Errorf("ParseFormat(%s) = %s, %v", f, got, err)
		}
	}
	if _, err := ident.ParseFormat("zookeeper"); err == nil || !strings.Contains(err.Error(), "kafka") {
		t.Errorf("ParseFormat(zookeeper): %v, want an error listing the formats", err)
	}
}

func TestIdentityString(t *testing.T) {
	id := ident.Identity{ID: "3", Fields: map[string]string{"version": "2", "broker_id": "3"}}
	if got, want := id.String(), "3 (broker_id=3, version=2)"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	if got := (ident.Identity{ID: "x"}).String(); got != "x" {
		t.Fatalf("String() = %q", got)
	}
}
