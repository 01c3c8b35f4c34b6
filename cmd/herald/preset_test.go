package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/elect/ident"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
	"github.com/zkherald/herald/publish"
)

func TestParsePreset(t *testing.T) {
	for _, c := range []struct {
		spec, root string
		leaders    []string
		groups     []string
	}{
		{"kafka", "/", []string{"/controller"}, nil},
		{"kafka=/kafka-prod", "/kafka-prod", []string{"/kafka-prod/controller"}, nil},
		{"hbase", "/hbase", []string{"/hbase/master"}, nil},
		{"hbase=/hbase-unsecure", "/hbase-unsecure", []string{"/hbase-unsecure/master"}, nil},
		{"hadoop-ha", "/hadoop-ha", nil, nil},
		{"solr=/solr", "/solr", []string{"/solr/overseer_elect/leader"}, []string{"/solr/overseer_elect/election"}},
		{"druid", "/druid", nil, []string{"/druid/coordinator/_COORDINATOR", "/druid/overlord/_OVERLORD"}},
		{"storm", "/storm", nil, []string{"/storm/leader-lock"}},
		{"pulsar", "/", []string{"/loadbalance/leader"}, nil},
		{"helix=MYCLUSTER", "/MYCLUSTER", []string{"/MYCLUSTER/CONTROLLER/LEADER"}, nil},
	} {
		p, root, err := parsePreset(c.spec)
		if err != nil || root != c.root {
			t.Errorf("parsePreset(%s) = %q, %v; want root %q", c.spec, root, err, c.root)
			continue
		}
		sp := p.expand(root)
		var leaders []string
		for _, l := range sp.leaders {
			leaders = append(leaders, l.path)
		}
		if strings.Join(leaders, ",") != strings.Join(c.leaders, ",") || strings.Join(sp.groups, ",") != strings.Join(c.groups, ",") {
			t.Errorf("%s: leaders %v groups %v, want %v %v", c.spec, leaders, sp.groups, c.leaders, c.groups)
		}
	}
	sp := presets[0].expand("/k")
	if sp.leaders[0].node.EpochPath != "/k/controller_epoch" || sp.leaders[0].node.Format != ident.Kafka {
		t.Errorf("kafka: %+v", sp.leaders[0].node)
	}
	for _, bad := range []string{"kafak", "helix", "hbase=relative//x", ""} {
		if _, _, err := parsePreset(bad); err == nil {
			t.Errorf("parsePreset(%q) accepted", bad)
		}
	}
}

// The bridge observes a preset's single-node leaders, the leaders below
// every child of a root (Hadoop's nameservices) and its queue groups.
func TestApplyPresetsToBridgeFlags(t *testing.T) {
	f := bridgeFlags{presets: []string{"druid=/d", "storm"}, watch: []string{"/d/overlord/_OVERLORD"}, recipes: []string{"/storm/leader-lock=lock"}}
	if err := f.applyPresets(discardLog()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.watch, ","); got != "/d/overlord/_OVERLORD,/d/coordinator/_COORDINATOR,/storm/leader-lock" {
		t.Errorf("watch %s", got)
	}
	if got := strings.Join(f.recipes, ","); got != "/storm/leader-lock=lock,/d/coordinator/_COORDINATOR=election,/d/overlord/_OVERLORD=election" {
		t.Errorf("recipes %s", got)
	}
	f = bridgeFlags{presets: []string{"kafka=/k", "hadoop-ha", "solr"}, leaderArgs: []string{"/hbase/master", "/x/leader=pulsar"}}
	if err := f.applyPresets(discardLog()); err != nil {
		t.Fatal(err)
	}
	if err := f.leaderFlags(); err != nil {
		t.Fatal(err)
	}
	if sn, ok := f.leaders["/k/controller"]; !ok || sn.Format != ident.Kafka || sn.EpochPath != "/k/controller_epoch" {
		t.Errorf("kafka preset: leaders %+v", f.leaders)
	}
	if sn, ok := f.leaders["/x/leader"]; !ok || sn.Format != ident.Pulsar {
		t.Errorf("--leader /x/leader=pulsar: leaders %+v", f.leaders)
	}
	if _, ok := f.leaders["/hbase/master"]; !ok || f.leaders["/overseer_elect/leader"].Format != ident.SolrOverseer {
		t.Errorf("--leader /hbase/master and solr's overseer: leaders %+v", f.leaders)
	}
	found := map[string]bool{}
	for _, pt := range f.patterns {
		found[fmt.Sprintf("%s leader=%v", pt, pt.Leader != nil)] = true
	}
	for _, want := range []string{
		"/hadoop-ha/*/ActiveStandbyElectorLock leader=true",
		"/collections/*/leaders/*/leader leader=true",
		"/collections/*/leader_elect/*/election leader=false",
	} {
		if !found[want] {
			t.Errorf("patterns %v lack %s", found, want)
		}
	}
	if !strings.Contains(strings.Join(f.recipes, ","), "/collections/*/leader_elect/*/election=election") {
		t.Errorf("Solr's shard elections are not ruled elections: %v", f.recipes)
	}
	_, stderr, code := heraldRun(t, nil, "bridge", "--zk", "127.0.0.1:1", "--leader", "/a=nosuch")
	if code != exitUsage || !strings.Contains(stderr, "--leader") {
		t.Errorf("bridge --leader with a bad format: exit %d: %s", code, stderr)
	}
	_, stderr, code = heraldRun(t, nil, "who", "--preset", "nosuch")
	if code != exitUsage || !strings.Contains(stderr, "kafka, hbase, hadoop-ha, solr, druid, storm, pulsar") {
		t.Errorf("who --preset nosuch: exit %d: %s", code, stderr)
	}
	_, stderr, code = heraldRun(t, nil, "who", "/x", "--preset", "kafka")
	if code != exitUsage || !strings.Contains(stderr, "not both") {
		t.Errorf("who PATH --preset: exit %d: %s", code, stderr)
	}
}

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// rawZK is a plain go-zookeeper session, as the systems' own clients
// write with; closed with the test.
func rawZK(t *testing.T) *zk.Conn {
	t.Helper()
	return zkSession(t).Conn()
}

func mkpath(t *testing.T, c *zk.Conn, p string) {
	t.Helper()
	cur := ""
	for _, part := range strings.Split(strings.Trim(p, "/"), "/") {
		cur += "/" + part
		if _, err := c.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", cur, err)
		}
	}
}

func ephemeral(t *testing.T, c *zk.Conn, p string, data []byte) {
	t.Helper()
	mknode(t, c, p, data, zk.FlagEphemeral)
}

// mknode creates p with data and flags (and its parents), open to all, as
// a client other than herald would, and returns the path ZooKeeper gave
// it (a sequential node's has its sequence).
func mknode(t *testing.T, c *zk.Conn, p string, data []byte, flags int32) string {
	t.Helper()
	mkpath(t, c, path.Dir(p))
	made, err := c.Create(p, data, flags, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatalf("create %s: %v", p, err)
	}
	return made
}

// kafkaRegister is KafkaZkClient.registerControllerAndIncrementControllerEpoch:
// /controller_epoch created with 0 when missing, then one multi creating
// the EPHEMERAL /controller (ControllerZNode.encode, version 2) and
// setting the epoch to +1 at the version read.
func kafkaRegister(t *testing.T, c *zk.Conn, chroot string, broker int) {
	t.Helper()
	mkpath(t, c, chroot)
	ep := chroot + "/controller_epoch"
	if _, err := c.Create(ep, []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	data, st, err := c.Get(ep)
	if err != nil {
		t.Fatal(err)
	}
	var epoch int
	fmt.Sscan(string(data), &epoch)
	if _, err := c.Multi(
		&zk.CreateRequest{Path: chroot + "/controller", Data: fmt.Appendf(nil, `{"version":2,"brokerid":%d,"timestamp":"%d","kraftControllerEpoch":-1}`, broker, time.Now().UnixMilli()), Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral},
		&zk.SetDataRequest{Path: ep, Data: fmt.Appendf(nil, "%d", epoch+1), Version: st.Version},
	); err != nil {
		t.Fatal(err)
	}
}

// TestWhoKafkaController is the issue as a user met it: herald who on
// /controller said "no owner, 0 waiting" while a broker was controller.
func TestWhoKafkaController(t *testing.T) {
	zkf := zkFlags(t)
	chroot := uniq(t)
	broker := zkSession(t)
	kafkaRegister(t, broker.Conn(), chroot, 1)

	out, stderr, code := heraldRun(t, nil, append(zkf, "who", chroot+"/controller")...)
	if code != 0 || !strings.Contains(out, "owner 1, since") || !strings.Contains(out, "broker_id=1") || !strings.Contains(out, "epoch 1") || !strings.Contains(out, fmt.Sprintf("0x%x", broker.ID())) {
		t.Fatalf("who /controller: exit %d\n%s%s", code, out, stderr)
	}
	out, stderr, code = heraldRun(t, nil, append(zkf, "who", "--preset", "kafka="+chroot, "--json")...)
	var reports []struct {
		Group string `json:"group"`
		Owner *struct {
			ID   string `json:"id"`
			Term int64  `json:"term"`
		} `json:"owner"`
		Leader *struct {
			Format string            `json:"format"`
			Fields map[string]string `json:"fields"`
			Epoch  *int64            `json:"epoch"`
		} `json:"leader"`
	}
	if err := json.Unmarshal([]byte(out), &reports); err != nil || code != 0 || len(reports) != 1 {
		t.Fatalf("who --preset kafka --json: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	r := reports[0]
	if r.Group != chroot+"/controller" || r.Owner == nil || r.Owner.ID != "1" || r.Owner.Term == 0 || r.Leader == nil ||
		r.Leader.Format != "kafka" || r.Leader.Fields["version"] != "2" || r.Leader.Epoch == nil || *r.Leader.Epoch != 1 {
		t.Fatalf("report %+v / %+v", r, r.Leader)
	}
	_ = broker.Close() // the controller goes
	out, _, code = heraldRun(t, nil, append(zkf, "who", "--preset", "kafka="+chroot)...)
	if code != 0 || !strings.Contains(out, "no owner: no leader node (last epoch 1)") {
		t.Fatalf("after the controller left: exit %d\n%s", code, out)
	}
	// A root where no Kafka lives (a wrong chroot) is no "no owner".
	for _, spec := range []string{"kafka=" + chroot + "/nonexistent", "hbase=" + chroot + "/nope", "solr=" + chroot + "/nothing", "pulsar=" + chroot + "/x"} {
		out, stderr, code := heraldRun(t, nil, append(zkf, "who", "--preset", spec)...)
		if code != exitFailure || strings.Contains(out, "no owner") || !strings.Contains(stderr, "found below "+chroot+"/") || !strings.Contains(stderr, "nothing the preset names was found") {
			t.Errorf("who --preset %s, nothing there: exit %d, want %d saying nothing was found:\n%s%s", spec, code, exitFailure, out, stderr)
		}
	}
	// A queue's parent is read as before.
	g := uniq(t)
	campaign(t, zkSession(t), g, "alpha")
	if out, _, code := heraldRun(t, nil, append(zkf, "who", g)...); code != 0 || !strings.Contains(out, "owner alpha") || strings.Contains(out, "generic") {
		t.Fatalf("who on a herald group: exit %d\n%s", code, out)
	}
}

func hbaseMaster(host string, port uint32, start uint64) []byte {
	var sn, m []byte
	sn = protowire.AppendTag(sn, 1, protowire.BytesType)
	sn = protowire.AppendString(sn, host)
	sn = protowire.AppendTag(sn, 2, protowire.VarintType)
	sn = protowire.AppendVarint(sn, uint64(port))
	sn = protowire.AppendTag(sn, 3, protowire.VarintType)
	sn = protowire.AppendVarint(sn, start)
	m = protowire.AppendTag(m, 1, protowire.BytesType)
	m = protowire.AppendBytes(m, sn)
	m = protowire.AppendTag(m, 2, protowire.VarintType)
	m = protowire.AppendVarint(m, 0)
	m = protowire.AppendTag(m, 3, protowire.VarintType)
	m = protowire.AppendVarint(m, 16010)
	id := []byte("master:16000")
	out := binary.BigEndian.AppendUint32([]byte{0xFF}, uint32(len(id)+8))
	out = append(append(append(out, id...), "saltsalt"...), "PBUF"...)
	return append(out, m...)
}

func activeNodeInfo(ns, nn, host string) []byte {
	var b []byte
	for i, s := range []string{ns, nn, host} {
		b = protowire.AppendTag(b, protowire.Number(i+1), protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	b = protowire.AppendTag(b, 4, protowire.VarintType)
	b = protowire.AppendVarint(b, 8020)
	b = protowire.AppendTag(b, 5, protowire.VarintType)
	return protowire.AppendVarint(b, 8019)
}

// Every preset's leaders, written as each system writes them, read in one
// herald who.
func TestWhoPresets(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zkf := zkFlags(t)
	base := uniq(t)
	c := rawZK(t)
	ephemeral(t, c, base+"/hbase/master", hbaseMaster("hm1.example.com", 16000, 1732380000001))
	ephemeral(t, c, base+"/hadoop-ha/ns1/ActiveStandbyElectorLock", activeNodeInfo("ns1", "nn2", "nn2.example.com"))
	mkpath(t, c, base+"/hadoop-ha/ns2") // a nameservice without an active NameNode
	ephemeral(t, c, base+"/solr/overseer_elect/leader", []byte("{\n  \"id\":\"72057594037927936-10.0.0.7:8983_solr-n_0000000000\"}"))
	ephemeral(t, c, base+"/solr/collections/films/leaders/shard1/leader",
		[]byte(`{"core":"films_shard1_replica_n1","node_name":"10.0.0.7:8983_solr","base_url":"http://10.0.0.7:8983/solr","core_node_name":"core_node2"}`))
	mkpath(t, c, base+"/solr/overseer_elect/election")
	if _, err := c.Create(base+"/solr/overseer_elect/election/72057594037927936-10.0.0.7:8983_solr-n_", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	// Druid's coordinator: a Curator LeaderLatch, data = the URL.
	mkpath(t, c, base+"/druid/coordinator/_COORDINATOR")
	if _, err := c.Create(base+"/druid/coordinator/_COORDINATOR/_c_1f0e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b-latch-", []byte("http://coord1:8081"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	ephemeral(t, c, base+"/loadbalance/leader", []byte(`{"brokerId":"broker-1:8080","serviceUrl":"http://broker-1:8080"}`))
	ephemeral(t, c, base+"/HC/CONTROLLER/LEADER", []byte(`{"id":"controller_1","simpleFields":{"SESSION_ID":"abc"},"listFields":{},"mapFields":{}}`))

	args := append(zkf, "who",
		"--preset", "hbase="+base+"/hbase", "--preset", "hadoop-ha="+base+"/hadoop-ha", "--preset", "solr="+base+"/solr",
		"--preset", "druid="+base+"/druid", "--preset", "pulsar="+base, "--preset", "helix="+base+"/HC")
	out, stderr, code := heraldRun(t, nil, args...)
	if code != 0 {
		t.Fatalf("who --preset ...: exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{
		base + "/hbase/master (election, from zookeeper): owner hm1.example.com,16000,1732380000001",
		"host=hm1.example.com, info_port=16010",
		base + "/hadoop-ha/ns1/ActiveStandbyElectorLock (election, from zookeeper): owner nn2",
		"nameservice=ns1, port=8020, zkfc_port=8019",
		base + "/hadoop-ha/ns2/ActiveStandbyElectorLock (election, from zookeeper): no owner: no leader node",
		base + "/solr/overseer_elect/leader (election, from zookeeper): owner 10.0.0.7:8983_solr",
		base + "/solr/collections/films/leaders/shard1/leader (election, from zookeeper): owner core_node2",
		base + "/solr/overseer_elect/election (election, from zookeeper): owner 10.0.0.7:8983_solr",
		base + "/druid/coordinator/_COORDINATOR (election, from zookeeper): owner http://coord1:8081",
		base + "/loadbalance/leader (election, from zookeeper): owner broker-1:8080",
		base + "/HC/CONTROLLER/LEADER (election, from zookeeper): owner controller_1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The overlord has no group: said on stderr, the rest still shown.
	if !strings.Contains(stderr, base+"/druid/overlord/_OVERLORD") {
		t.Errorf("stderr does not name the missing overlord group: %s", stderr)
	}
	if t.Failed() {
		t.Logf("output:\n%s\nstderr:\n%s", out, stderr)
	}
	_, stderr, code = heraldRun(t, nil, append(zkf, "who", "--preset", "hadoop-ha="+base+"/none")...)
	if code != exitFailure || !strings.Contains(stderr, "no nameservice found below "+base+"/none") {
		t.Errorf("nothing there: exit %d: %s", code, stderr)
	}
	// No Storm there: said as for the other systems, where each group's
	// path was reported unreadable ("could not read what the preset names").
	_, stderr, code = heraldRun(t, nil, append(zkf, "who", "--preset", "storm="+base+"/nostorm")...)
	if code != exitFailure || !strings.Contains(stderr, "no Storm cluster found below "+base+"/nostorm") || strings.Contains(stderr, "could not read") {
		t.Errorf("no Storm: exit %d: %s", code, stderr)
	}
	// A nameservice given for the parent of nameservices: said so, where
	// its lock and breadcrumb were walked into as nameservices
	// (TestNameserviceGivenAsThePresetRoot for the bridge).
	_, stderr, code = heraldRun(t, nil, append(zkf, "who", "--preset", "hadoop-ha="+base+"/hadoop-ha/ns1")...)
	if code != exitFailure || !strings.Contains(stderr, "it holds ActiveStandbyElectorLock itself") ||
		!strings.Contains(stderr, "give its parent, "+base+"/hadoop-ha,") || strings.Contains(stderr, "ActiveStandbyElectorLock/ActiveStandbyElectorLock") {
		t.Errorf("a nameservice as the root: exit %d: %s", code, stderr)
	}

	// A target that fails says nothing of the next: with the coordinator
	// missing, the overlord after it is still read and shown.
	lone := uniq(t) + "/druid"
	mkpath(t, c, lone+"/overlord/_OVERLORD")
	if _, err := c.Create(lone+"/overlord/_OVERLORD/_c_2f0e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b-latch-", []byte("http://overlord-1:8090"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = heraldRun(t, nil, append(zkf, "who", "--preset", "druid="+lone)...)
	if code != 0 || !strings.Contains(out, lone+"/overlord/_OVERLORD (election, from zookeeper): owner http://overlord-1:8090") ||
		!strings.Contains(stderr, lone+"/coordinator/_COORDINATOR") || strings.Contains(stderr, lone+"/overlord/_OVERLORD: ") {
		t.Errorf("who --preset druid with the coordinator missing: exit %d, want 0 and the overlord shown:\n%s%s", code, out, stderr)
	}

	// ZooKeeper unreachable: 69, as for who PATH.
	if _, stderr, code := heraldRun(t, nil, "--zk", "127.0.0.1:1", "--connect-timeout", "1s", "who", "--preset", "kafka"); code != exitUnreachable {
		t.Errorf("who --preset with ZooKeeper unreachable: exit %d, want %d: %s", code, exitUnreachable, stderr)
	}
}

// herald bridge --preset druid publishes the coordinator's elections.
func TestBridgePresetDruid(t *testing.T) {
	zkf := zkFlags(t)
	base := uniq(t) + "/druid"
	p := start(t, nil, append(zkf, "bridge", "--preset", "druid="+base, "--nats-listen", "127.0.0.1:0", "--nats-store", t.TempDir())...)
	url := waitMatch(t, p, subscribeLine, 30*time.Second)
	sub := subscribe(t, url, "herald.>")
	c := rawZK(t)
	g := base + "/coordinator/_COORDINATOR"
	mkpath(t, c, g)
	node, err := c.Create(g+"/_c_1f0e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b-latch-", []byte("http://coord1:8081"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	e := sub.waitID(t, publish.MakeID(g, path.Base(node), publish.LeaderElected), 15*time.Second)
	if e.Owner == nil || e.Owner.ID != "http://coord1:8081" || e.Recipe != elect.RecipeElection {
		t.Fatalf("coordinator elected: %+v", e)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, 15*time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
}

// A preset composes with --watch in the YAML config: the bridge publishes
// both the watched group and the preset's single-node leader.
func TestBridgePresetInConfigFile(t *testing.T) {
	zks := zktest.Shared(t)
	g, root := uniq(t), uniq(t)+"-kafka"
	c := rawZK(t)
	for _, p := range []string{path.Dir(root), root} {
		if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(t.TempDir(), "bridge.yaml")
	yaml := fmt.Sprintf("zk: %s\nsession-timeout: 2s\nwatch:\n  - %s\npreset:\n  - kafka=%s\nnats-listen: \"127.0.0.1:0\"\nnats-store: %s\n",
		zks.ConnectString(), g, root, t.TempDir())
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, nil, "bridge", "--config", cfg)
	url := waitMatch(t, p, subscribeLine, 30*time.Second)
	sub := subscribe(t, url, "herald.>")
	h := campaign(t, zkSession(t), g, "w")
	sub.waitID(t, publish.MakeID(g, h.Node(), publish.LeaderElected), 15*time.Second)
	if _, err := c.Create(root+"/controller", []byte(`{"version":1,"brokerid":7,"timestamp":"1"}`), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(15*time.Second, func() bool {
		for _, e := range sub.all() {
			if e.Type == publish.LeaderElected && e.Group == root+"/controller" && e.Owner != nil && e.Owner.ID == "7" {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the preset's controller never published; got %+v", sub.all())
	}
}

// A leader node the preset names that this identity may not read is no
// "nothing found": who says ZooKeeper refused the identity, and how to
// log in as one it admits.
func TestWhoPresetUnreadableSaysRefused(t *testing.T) {
	zkf := zkFlags(t)
	chroot := uniq(t)
	broker := zkSession(t)
	kafkaRegister(t, broker.Conn(), chroot, 1)
	if _, err := broker.Conn().SetACL(chroot+"/controller", zk.DigestACL(zk.PermAll, "kafka", "secret"), -1); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := heraldRun(t, nil, append(zkf, "who", "--preset", "kafka="+chroot)...)
	if code != exitFailure || strings.Contains(stderr, "nothing the preset names was found") || !strings.Contains(stderr, "refused this identity") ||
		!strings.Contains(stderr, "could not read what the preset names: "+chroot+"/controller") {
		t.Fatalf("who --preset with the controller unreadable: exit %d, want %d saying ZooKeeper refused this identity\n%s%s", code, exitFailure, out, stderr)
	}
}

// TestWhoKafkaEpochUnreadable: an ACL hiding /controller_epoch alone failed
// who --preset kafka with a bare "zk: not authenticated", though the
// controller could be read: it names the controller, its epoch unknown and
// why.
func TestWhoKafkaEpochUnreadable(t *testing.T) {
	zkf := zkFlags(t)
	chroot := uniq(t)
	broker := zkSession(t)
	kafkaRegister(t, broker.Conn(), chroot, 1)
	if _, err := broker.Conn().SetACL(chroot+"/controller_epoch", zk.DigestACL(zk.PermAll, "kafka", "secret"), -1); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := heraldRun(t, nil, append(zkf, "who", "--preset", "kafka="+chroot)...)
	if code != 0 || !strings.Contains(out, "owner 1, since") || strings.Contains(out, "; epoch ") ||
		!strings.Contains(out, "its epoch is not known: "+chroot+"/controller_epoch may not be read") {
		t.Fatalf("who --preset kafka with the epoch unreadable: exit %d, want 0 naming broker 1, its epoch not known and why\n%s%s", code, out, stderr)
	}
}

// TestWhoKafkaEpochDeleted: /controller_epoch deleted under a live
// controller was left out of who without a word, as if Kafka kept no
// epoch: who names the controller and says the epoch node does not exist.
func TestWhoKafkaEpochDeleted(t *testing.T) {
	zkf := zkFlags(t)
	chroot := uniq(t)
	broker := zkSession(t)
	kafkaRegister(t, broker.Conn(), chroot, 1)
	if err := broker.Conn().Delete(chroot+"/controller_epoch", -1); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := heraldRun(t, nil, append(zkf, "who", "--preset", "kafka="+chroot)...)
	if code != 0 || !strings.Contains(out, "owner 1, since") || strings.Contains(out, "; epoch ") ||
		!strings.Contains(out, "its epoch is not known: "+chroot+"/controller_epoch does not exist") {
		t.Fatalf("who --preset kafka with the epoch node deleted: exit %d, want 0 naming broker 1, its epoch not known and why\n%s%s", code, out, stderr)
	}
}

// TestRootAsADiscoverRoot: "/" is a discover root like any other, its
// children groups, save the server's own /zookeeper: --discover / and
// --preset NAME=/ are taken by bridge, and who --preset NAME=/ walks every
// top-level node but /zookeeper, with no error for it.
func TestRootAsADiscoverRoot(t *testing.T) {
	audit := t.TempDir() + "/audit.log"
	for _, args := range [][]string{{"--discover", "/"}, {"--preset", "hadoop-ha=/"}} {
		all := append([]string{"bridge", "--zk", "127.0.0.1:1", "--connect-timeout", "200ms", "--audit", audit}, args...)
		_, stderr, code := heraldRun(t, nil, all...)
		if code == exitUsage || strings.Contains(stderr, "cannot be a group") || strings.Contains(stderr, "bad configuration") {
			t.Errorf("bridge %v: exit %d: %s; want the root taken (then ZooKeeper unreachable)", args, code, stderr)
		}
	}
	zkf := zkFlags(t)
	c := rawZK(t)
	top := "/" + strings.ReplaceAll(strings.TrimPrefix(uniq(t), "/"), "/", "-")
	ephemeral(t, c, top+"/ActiveStandbyElectorLock", activeNodeInfo(strings.TrimPrefix(top, "/"), "nn1", "nn1.example.com"))
	t.Cleanup(func() { _ = c.Delete(top+"/ActiveStandbyElectorLock", -1); _ = c.Delete(top, -1) })
	out, stderr, code := heraldRun(t, nil, append(zkf, "who", "--preset", "hadoop-ha=/")...)
	if code != 0 || !strings.Contains(out, top+"/ActiveStandbyElectorLock (election, from zookeeper): owner nn1") ||
		strings.Contains(out+stderr, "/zookeeper") {
		t.Errorf("who --preset hadoop-ha=/: exit %d\n%s\nstderr:\n%s", code, out, stderr)
	}
}

// TestLeaderFormatFollowsTheLastEquals: --leader PATH=FORMAT cuts at the
// last '=', as --recipe does, so a path with '=' can be given; PATH=
// takes the format by path.
func TestLeaderFormatFollowsTheLastEquals(t *testing.T) {
	f := bridgeFlags{leaderArgs: []string{"/a=b/leader=pulsar", "/c=d/master="}}
	if err := f.leaderFlags(); err != nil {
		t.Fatal(err)
	}
	if sn, ok := f.leaders["/a=b/leader"]; !ok || sn.Format != "pulsar" {
		t.Errorf("/a=b/leader=pulsar: leaders %+v", f.leaders)
	}
	if _, ok := f.leaders["/c=d/master"]; !ok {
		t.Errorf("/c=d/master=: leaders %+v", f.leaders)
	}
	// One node read two ways: refused, where the last given won silently.
	f = bridgeFlags{leaderArgs: []string{"/k/controller=kafka", "/k/controller", "/k/controller=hbase"}}
	if err := f.leaderFlags(); err == nil || !strings.Contains(err.Error(), "already observed as kafka") {
		t.Errorf("/k/controller as kafka then hbase: %v; want refused", err)
	}
	f = bridgeFlags{leaderArgs: []string{"/a=b"}}
	if err := f.leaderFlags(); err == nil || !strings.Contains(err.Error(), "last '='") {
		t.Errorf("/a=b: %v; want the format b refused, saying where the format goes", err)
	}
}

// TestWhoKRaftControllerSaysItMayBePast: during a migration to KRaft, a
// KRaft controller writes /controller as a persistent node, and once the
// migration is finalized nobody writes it again. who showed that node as
// the controller with nothing more, for ever after; it now says the node
// may name a past controller and whom to ask.
func TestWhoKRaftControllerSaysItMayBePast(t *testing.T) {
	zkf := zkFlags(t)
	chroot := uniq(t)
	c := rawZK(t)
	mkpath(t, c, chroot)
	if _, err := c.Create(chroot+"/controller_epoch", []byte("7"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	data := fmt.Appendf(nil, `{"version":2,"brokerid":3000,"timestamp":"%d","kraftControllerEpoch":5}`, time.Now().UnixMilli())
	if _, err := c.Create(chroot+"/controller", data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := heraldRun(t, nil, append(zkf, "who", chroot+"/controller")...)
	if code != 0 || !strings.Contains(out, "owner 3000") || !strings.Contains(out, "ask the KRaft quorum") {
		t.Errorf("who of a KRaft controller's /controller: exit %d\n%s%s\nwant owner 3000, saying it may be a past controller", code, out, stderr)
	}
	out, _, _ = heraldRun(t, nil, append(zkf, "who", chroot+"/controller", "--json")...)
	if !strings.Contains(out, `"note":`) || !strings.Contains(out, "not rewritten once the migration is finalized") {
		t.Errorf("who --json of a KRaft controller's /controller has no note:\n%s", out)
	}
	// A ZooKeeper-mode controller (ephemeral) gets no such note.
	broker := zkSession(t)
	other := uniq(t) + "-zk"
	kafkaRegister(t, broker.Conn(), other, 1)
	if out, _, _ := heraldRun(t, nil, append(zkf, "who", other+"/controller")...); strings.Contains(out, "KRaft quorum") {
		t.Errorf("who of a ZooKeeper-mode controller notes KRaft:\n%s", out)
	}
}

// TestKRaftNoteReachesConsumers: `who --zk` says that a KRaft
// controller's /controller may name a past controller; the events a
// bridge published said nothing of it, so `who --nats`, `who --kafka` and
// `tail` showed it as any leader held. The events and the owners store
// now carry the note, and who prints it from either.
func TestKRaftNoteReachesConsumers(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zkf := zkFlags(t)
	chroot := uniq(t)
	c := rawZK(t)
	mkpath(t, c, chroot)
	data := fmt.Appendf(nil, `{"version":2,"brokerid":3000,"timestamp":"%d","kraftControllerEpoch":5}`, time.Now().UnixMilli())
	// With /controller_epoch, as the KRaft controller writes it in the
	// same transaction (tryRegisterKRaftControllerAsActiveController).
	if _, err := c.Multi(
		&zk.CreateRequest{Path: chroot + "/controller_epoch", Data: []byte("7"), Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: chroot + "/controller", Data: data, Acl: zk.WorldACL(zk.PermAll)},
	); err != nil {
		t.Fatal(err)
	}
	url, kafka := natsserver.Start(t).URL(), strings.Join(kafkatest.Start(t).Addrs(), ",")
	p := start(t, nil, append(zkf, "bridge", "--preset", "kafka="+chroot, "--nats", url, "--kafka", kafka, "--heartbeat", "200ms",
		"--source", "kraft-"+newRunID())...)
	for _, src := range [][]string{{"--nats", url}, {"--kafka", kafka}} {
		var out string
		var code int
		if err := waitFor(30*time.Second, func() bool {
			out, _, code = heraldRun(t, nil, append([]string{"who", chroot + "/controller"}, src...)...)
			return code == 0 && strings.Contains(out, "3000")
		}); err != nil {
			t.Fatalf("who %v never named the controller: exit %d\n%s\nbridge:\n%s", src, code, out, p.out)
		}
		if !strings.Contains(out, "note: "+elect.KRaftNote) {
			t.Errorf("who %v of a KRaft controller's /controller lacks the note:\n%s", src, out)
		}
		out, _, _ = heraldRun(t, nil, append([]string{"who", chroot + "/controller", "--json"}, src...)...)
		var r whoReport
		if err := json.Unmarshal([]byte(out), &r); err != nil || !slices.Contains(r.Notes, elect.KRaftNote) {
			t.Errorf("who %v --json: notes %q (%v), want the KRaft note:\n%s", src, r.Notes, err, out)
		}
	}
}

// TestWhoNameserviceWithoutActivePointsAtTheLock: a Hadoop HA nameservice
// with no active NameNode holds only ActiveBreadCrumb, the last active's
// record kept for fencing. who pointed at the breadcrumb as the node to
// read; it names the lock, where the next active will be, and the preset.
func TestWhoNameserviceWithoutActivePointsAtTheLock(t *testing.T) {
	zkf := zkFlags(t)
	ns := uniq(t) + "/ns1"
	c := rawZK(t)
	mkpath(t, c, ns)
	if _, err := c.Create(ns+"/ActiveBreadCrumb", []byte("\n\x03ns1\x12\x03nn1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	out, stderr, _ := heraldRun(t, nil, append(zkf, "who", ns)...)
	if !strings.Contains(out, "herald who "+ns+"/ActiveStandbyElectorLock") || !strings.Contains(out, "--preset hadoop-ha") || strings.Contains(out, "herald who "+ns+"/ActiveBreadCrumb") {
		t.Errorf("who of a nameservice with no active:\n%s%s\nwant the hint to name the lock and the preset, not the breadcrumb", out, stderr)
	}
}

// TestWhoKafkaEpochUnreadableWithoutController: with no controller, who
// --preset kafka names the last election's epoch; an ACL hiding
// /controller_epoch left it out without a word, as if Kafka kept none,
// in the table and in --json alike. It says the epoch is not known, and
// why.
func TestWhoKafkaEpochUnreadableWithoutController(t *testing.T) {
	zkf := zkFlags(t)
	chroot := uniq(t)
	broker := zkSession(t)
	kafkaRegister(t, broker.Conn(), chroot, 1)
	if err := broker.Conn().Delete(chroot+"/controller", -1); err != nil { // broker 1's end
		t.Fatal(err)
	}
	if _, err := broker.Conn().SetACL(chroot+"/controller_epoch", zk.DigestACL(zk.PermAll, "kafka", "secret"), -1); err != nil {
		t.Fatal(err)
	}
	why := "its epoch is not known: " + chroot + "/controller_epoch may not be read"
	out, stderr, code := heraldRun(t, nil, append(zkf, "who", "--preset", "kafka="+chroot)...)
	if code == exitFailure || !strings.Contains(out, "no owner: no leader node") || !strings.Contains(out, why) {
		t.Fatalf("who --preset kafka with no controller and the epoch unreadable: exit %d, want no owner, its epoch not known and why\n%s%s", code, out, stderr)
	}
	out, stderr, _ = heraldRun(t, nil, append(zkf, "who", "--preset", "kafka="+chroot, "--json")...)
	var reports []whoReport
	if err := json.Unmarshal([]byte(out), &reports); err != nil || len(reports) != 1 || reports[0].Leader == nil ||
		reports[0].Leader.Epoch != nil || !strings.Contains(reports[0].Leader.Note, why) {
		t.Fatalf("who --preset kafka --json with no controller and the epoch unreadable: %v, want leader.note saying why\n%s%s", err, out, stderr)
	}
}
