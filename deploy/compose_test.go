// Package deploy holds herald's deployment files (the Dockerfile) and the
// test that keeps docker-compose.yml honest without a Docker engine.
package deploy

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

type compose struct {
	Name     string             `json:"name"`
	Services map[string]service `json:"services"`
	Volumes  map[string]any     `json:"volumes"`
}

type service struct {
	Image       string            `json:"image"`
	Build       *build            `json:"build"`
	Command     []string          `json:"command"`
	Environment map[string]string `json:"environment"`
	Ports       []string          `json:"ports"`
	Volumes     []string          `json:"volumes"`
	DependsOn   map[string]struct {
		Condition string `json:"condition"`
	} `json:"depends_on"`
	Healthcheck     *healthcheck `json:"healthcheck"`
	StopGracePeriod string       `json:"stop_grace_period"`
	Hostname        string       `json:"hostname"`
	Restart         string       `json:"restart"`
}

type healthcheck struct {
	Test        []string `json:"test"`
	Interval    string   `json:"interval"`
	Timeout     string   `json:"timeout"`
	Retries     int      `json:"retries"`
	StartPeriod string   `json:"start_period"`
}

type build struct {
	Context    string `json:"context"`
	Dockerfile string `json:"dockerfile"`
}

func load(t *testing.T) (compose, string) {
	t.Helper()
	raw, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.UnmarshalStrict(raw, &c); err != nil {
		t.Fatalf("docker-compose.yml does not parse into the expected shape: %v", err)
	}
	return c, string(raw)
}

// flags parses "--k=v" and "--k v" arguments up to "--".
func flags(args []string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "--") {
			continue
		}
		k, v, ok := strings.Cut(a[2:], "=")
		if !ok && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			v = args[i+1]
			i++
		}
		out[k] = v
	}
	return out
}

// cliFlags reads the flag names herald's commands define from their source.
func cliFlags(t *testing.T, files ...string) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`Var\(&?[^,()]+, "([a-z0-9-]+)"`)
	out := map[string]bool{}
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join("..", "cmd", "herald", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			out[m[1]] = true
		}
	}
	if len(out) == 0 {
		t.Fatalf("no flags found in %v: has the flag style changed?", files)
	}
	return out
}

func TestZooKeeperEnsemble(t *testing.T) {
	c, _ := load(t)
	ids := map[string]bool{}
	for _, name := range []string{"zk1", "zk2", "zk3"} {
		s, ok := c.Services[name]
		if !ok {
			t.Fatalf("service %s missing", name)
		}
		if !strings.HasPrefix(s.Image, "zookeeper:3.8") {
			t.Errorf("%s: image %q, want the official zookeeper:3.8", name, s.Image)
		}
		id := s.Environment["ZOO_MY_ID"]
		if id != name[2:] || ids[id] {
			t.Errorf("%s: ZOO_MY_ID %q, want %s and unique", name, id, name[2:])
		}
		ids[id] = true
		servers := strings.Fields(s.Environment["ZOO_SERVERS"])
		sort.Strings(servers)
		want := []string{"server.1=zk1:2888:3888;2181", "server.2=zk2:2888:3888;2181", "server.3=zk3:2888:3888;2181"}
		if strings.Join(servers, " ") != strings.Join(want, " ") {
			t.Errorf("%s: ZOO_SERVERS %v, want %v", name, servers, want)
		}
		wl := s.Environment["ZOO_4LW_COMMANDS_WHITELIST"]
		for _, cmd := range []string{"srvr", "ruok", "mntr"} {
			if !strings.Contains(wl, cmd) {
				t.Errorf("%s: 4lw whitelist %q lacks %s (the health check and monitoring need it)", name, wl, cmd)
			}
		}
		if s.Healthcheck == nil || len(s.Healthcheck.Test) == 0 {
			t.Errorf("%s: no healthcheck", name)
		}
	}
}

func TestKafkaKRaft(t *testing.T) {
	c, _ := load(t)
	k, ok := c.Services["kafka"]
	if !ok {
		t.Fatal("service kafka missing")
	}
	if !strings.HasPrefix(k.Image, "apache/kafka:3.") {
		t.Errorf("kafka image %q, want apache/kafka:3.x", k.Image)
	}
	env := k.Environment
	for _, key := range []string{"CLUSTER_ID", "KAFKA_NODE_ID", "KAFKA_PROCESS_ROLES", "KAFKA_LISTENERS", "KAFKA_ADVERTISED_LISTENERS",
		"KAFKA_CONTROLLER_LISTENER_NAMES", "KAFKA_CONTROLLER_QUORUM_VOTERS", "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP",
		"KAFKA_INTER_BROKER_LISTENER_NAME", "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"} {
		if env[key] == "" {
			t.Errorf("kafka: %s not set", key)
		}
	}
	if env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] != "1" {
		t.Errorf("one broker needs KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=1, got %q", env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"])
	}
	roles := strings.Split(env["KAFKA_PROCESS_ROLES"], ",")
	sort.Strings(roles)
	if strings.Join(roles, ",") != "broker,controller" {
		t.Errorf("KAFKA_PROCESS_ROLES %q, want broker,controller", env["KAFKA_PROCESS_ROLES"])
	}
	// Every listener has a protocol; the controller listener is one of them
	// and is where the quorum voter (this node) is reached.
	protocols := map[string]string{}
	for _, kv := range strings.Split(env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"], ",") {
		n, p, _ := strings.Cut(kv, ":")
		protocols[n] = p
	}
	ports := map[string]string{}
	for _, l := range strings.Split(env["KAFKA_LISTENERS"], ",") {
		n, addr, ok := strings.Cut(l, "://")
		if !ok || protocols[n] == "" {
			t.Errorf("listener %q has no security protocol in the map", l)
		}
		ports[n] = addr[strings.LastIndex(addr, ":")+1:]
	}
	ctl := env["KAFKA_CONTROLLER_LISTENER_NAMES"]
	if ports[ctl] == "" {
		t.Errorf("controller listener %q is not among KAFKA_LISTENERS", ctl)
	}
	if want := env["KAFKA_NODE_ID"] + "@kafka:" + ports[ctl]; env["KAFKA_CONTROLLER_QUORUM_VOTERS"] != want {
		t.Errorf("KAFKA_CONTROLLER_QUORUM_VOTERS %q, want %q", env["KAFKA_CONTROLLER_QUORUM_VOTERS"], want)
	}
	if strings.Contains(env["KAFKA_ADVERTISED_LISTENERS"], ctl+"://") {
		t.Errorf("the controller listener must not be advertised: %q", env["KAFKA_ADVERTISED_LISTENERS"])
	}
	if !strings.Contains(env["KAFKA_ADVERTISED_LISTENERS"], env["KAFKA_INTER_BROKER_LISTENER_NAME"]+"://kafka:"+ports[env["KAFKA_INTER_BROKER_LISTENER_NAME"]]) {
		t.Errorf("containers reach kafka:PORT on the inter-broker listener; advertised: %q", env["KAFKA_ADVERTISED_LISTENERS"])
	}
	if k.Healthcheck == nil {
		t.Error("kafka: no healthcheck")
	}
}

// natsNodes are the NATS servers of the cluster, by service name.
var natsNodes = []string{"nats1", "nats2", "nats3"}

// TestNATSCluster: three NATS servers with JetStream form one cluster:
// each names itself, shares the cluster name, listens for routes on the
// port the others dial, routes to every other node (real services, never
// itself) and keeps its JetStream store on a volume of its own.
func TestNATSCluster(t *testing.T) {
	c, _ := load(t)
	if _, ok := c.Services["nats"]; ok {
		t.Error("a single service nats is left beside the cluster")
	}
	clusterName, routePort := "", ""
	stores := map[string]string{}
	for _, name := range natsNodes {
		n, ok := c.Services[name]
		if !ok {
			t.Fatalf("service %s missing", name)
		}
		if !strings.HasPrefix(n.Image, "nats:2.10") {
			t.Errorf("%s: image %q, want the official nats:2.10", name, n.Image)
		}
		f := natsFlags(n.Command)
		if _, js := f["js"]; !js {
			if _, js := f["jetstream"]; !js {
				t.Errorf("%s: command %v does not enable JetStream", name, n.Command)
			}
		}
		if f["server_name"] != name {
			t.Errorf("%s: --server_name %q, want the service's name (JetStream needs a stable, unique one)", name, f["server_name"])
		}
		if clusterName == "" {
			clusterName = f["cluster_name"]
		}
		if f["cluster_name"] == "" || f["cluster_name"] != clusterName {
			t.Errorf("%s: --cluster_name %q, want one name for all (%q)", name, f["cluster_name"], clusterName)
		}
		_, port, err := net.SplitHostPort(strings.TrimPrefix(f["cluster"], "nats://"))
		if err != nil {
			t.Errorf("%s: --cluster %q is not nats://HOST:PORT", name, f["cluster"])
		}
		if routePort == "" {
			routePort = port
		}
		if port != routePort {
			t.Errorf("%s: routes on port %s, the others on %s", name, port, routePort)
		}
		var routed []string
		for _, r := range strings.Split(f["routes"], ",") {
			host, p, err := net.SplitHostPort(strings.TrimPrefix(r, "nats://"))
			switch {
			case err != nil:
				t.Errorf("%s: route %q is not nats://HOST:PORT", name, r)
			case host == name:
				t.Errorf("%s routes to itself", name)
			case !contains(natsNodes, host):
				t.Errorf("%s: route %q names no NATS service", name, r)
			case p != routePort:
				t.Errorf("%s: route %q dials port %s; the nodes listen for routes on %s", name, r, p, routePort)
			}
			routed = append(routed, host)
		}
		sort.Strings(routed)
		var others []string
		for _, o := range natsNodes {
			if o != name {
				others = append(others, o)
			}
		}
		if strings.Join(routed, ",") != strings.Join(others, ",") {
			t.Errorf("%s routes to %v, want every other node %v", name, routed, others)
		}
		sd := f["sd"]
		if sd == "" {
			sd = f["store_dir"]
		}
		vol := ""
		for _, v := range n.Volumes {
			if src, dst, _ := strings.Cut(v, ":"); dst == sd {
				vol = src
			}
		}
		if vol == "" {
			t.Errorf("%s: JetStream store %q is not on a volume", name, sd)
		} else if other, dup := stores[vol]; dup {
			t.Errorf("%s and %s share the store volume %s", name, other, vol)
		}
		stores[vol] = name
		if n.Healthcheck == nil {
			t.Errorf("%s: no healthcheck", name)
		}
	}
}

// natsFlags parses nats-server's arguments: "-js", "--name value".
func natsFlags(args []string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		k := strings.TrimLeft(args[i], "-")
		if k == args[i] {
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out[k] = args[i+1]
			i++
		} else {
			out[k] = ""
		}
	}
	return out
}

func TestBridges(t *testing.T) {
	c, _ := load(t)
	known := cliFlags(t, "root.go", "bridge.go")
	nats := c.Services["kafka"].Environment["KAFKA_ADVERTISED_LISTENERS"]
	var bridges []string
	for name, s := range c.Services {
		if len(s.Command) > 0 && s.Command[0] == "bridge" {
			bridges = append(bridges, name)
		}
	}
	sort.Strings(bridges)
	if len(bridges) < 2 {
		t.Fatalf("want at least 2 bridges, found %v", bridges)
	}
	ha, sources := map[string]bool{}, map[string]bool{}
	shards, byShard := 0, map[int][]string{}
	hostPorts := map[string]string{}
	for _, name := range bridges {
		s := c.Services[name]
		f := flags(s.Command[1:])
		for k := range f {
			if !known[k] {
				t.Errorf("%s: --%s is not a flag of herald bridge", name, k)
			}
		}
		zks := strings.Split(f["zk"], ",")
		sort.Strings(zks)
		if strings.Join(zks, ",") != "zk1:2181,zk2:2181,zk3:2181" {
			t.Errorf("%s: --zk %q, want all three ZooKeepers", name, f["zk"])
		}
		var urls []string
		for _, u := range strings.Split(f["nats"], ",") {
			urls = append(urls, strings.TrimPrefix(strings.TrimSuffix(u, ":4222"), "nats://"))
		}
		sort.Strings(urls)
		if strings.Join(urls, ",") != strings.Join(natsNodes, ",") {
			t.Errorf("%s: --nats %q, want nats://N:4222 for every NATS node %v", name, f["nats"], natsNodes)
		}
		if f["nats-replicas"] != strconv.Itoa(len(natsNodes)) {
			t.Errorf("%s: --nats-replicas %q, want %d: a copy on every NATS node", name, f["nats-replicas"], len(natsNodes))
		}
		k, n, err := shard(f["shard"])
		switch {
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case shards != 0 && n != shards:
			t.Errorf("%s: --shard %q splits the groups %d ways, another bridge %d ways", name, f["shard"], n, shards)
		default:
			shards = n
			byShard[k] = append(byShard[k], name)
		}
		if f["kafka"] == "" || !strings.Contains(nats, "://"+f["kafka"]) {
			t.Errorf("%s: --kafka %q is not an advertised listener (%s)", name, f["kafka"], nats)
		}
		if f["ha"] == "" {
			t.Errorf("%s: no --ha", name)
		}
		ha[f["ha"]] = true
		if f["source"] == "" || sources[f["source"]] {
			t.Errorf("%s: --source %q missing or shared", name, f["source"])
		}
		sources[f["source"]] = true
		if f["watch"] == "" && f["discover"] == "" {
			t.Errorf("%s: observes nothing", name)
		}
		if s.Healthcheck == nil || !strings.Contains(strings.Join(s.Healthcheck.Test, " "), "bridge check") {
			t.Errorf("%s: healthcheck should run herald bridge check", name)
		}
		if !strings.HasSuffix(f["http"], ":9090") || !strings.Contains(strings.Join(s.Healthcheck.Test, " "), "127.0.0.1:9090/readyz") {
			t.Errorf("%s: health check and --http %q disagree", name, f["http"])
		}
		for _, p := range s.Ports {
			host, container, _ := strings.Cut(p, ":")
			if container != "9090" {
				t.Errorf("%s: port %q does not publish --http (9090)", name, p)
			}
			if other, dup := hostPorts[host]; dup {
				t.Errorf("%s and %s both publish on host port %s", name, other, host)
			}
			hostPorts[host] = name
		}
		if len(s.Ports) != 1 {
			t.Errorf("%s: ports %v, want one host port for its /metrics and /readyz", name, s.Ports)
		}
		for _, dep := range append([]string{"zk1", "zk2", "zk3", "kafka"}, natsNodes...) {
			if d, ok := s.DependsOn[dep]; !ok || d.Condition != "service_healthy" {
				t.Errorf("%s: must depend on %s being healthy", name, dep)
			}
		}
		if s.Build == nil || s.Build.Dockerfile != "deploy/Dockerfile" || s.Build.Context != "." {
			t.Errorf("%s: build %+v, want context . and deploy/Dockerfile", name, s.Build)
		}
		if f["audit"] != "" && !mounted(s, f["audit"]) {
			t.Errorf("%s: audit log %s is not on a volume", name, f["audit"])
		}
	}
	// --ha is shared: each shard's election path is derived from it.
	if len(ha) != 1 {
		t.Errorf("bridges give different --ha paths: %v", ha)
	}
	// Every shard has an active bridge and a standby.
	for k := 0; k < shards; k++ {
		if len(byShard[k]) != 2 {
			t.Errorf("shard %d/%d has bridges %v, want two (an active one and a standby)", k, shards, byShard[k])
		}
	}
	if shards < 2 {
		t.Errorf("the bridges split the groups %d ways, want at least 2 shards", shards)
	}
}

// shard parses --shard K/N (K in 0..N-1).
func shard(v string) (k, n int, err error) {
	ks, ns, ok := strings.Cut(v, "/")
	k, kerr := strconv.Atoi(ks)
	n, nerr := strconv.Atoi(ns)
	if !ok || kerr != nil || nerr != nil || n < 1 || k < 0 || k >= n {
		return 0, 0, fmt.Errorf("--shard %q is not K/N with 0 <= K < N", v)
	}
	return k, n, nil
}

func TestCandidates(t *testing.T) {
	c, _ := load(t)
	known := map[string]map[string]bool{
		"run":  cliFlags(t, "root.go", "run.go"),
		"lock": cliFlags(t, "root.go", "lock.go"),
	}
	n := 0
	for name, s := range c.Services {
		if len(s.Command) == 0 || known[s.Command[0]] == nil {
			continue
		}
		n++
		for k := range flags(s.Command[1:]) {
			if !known[s.Command[0]][k] {
				t.Errorf("%s: --%s is not a flag of herald %s", name, k, s.Command[0])
			}
		}
		if !contains(s.Command, "--") {
			t.Errorf("%s: no command after --", name)
		}
		if s.Image != c.Services["bridge-0a"].Image {
			t.Errorf("%s: image %q, want the herald image", name, s.Image)
		}
	}
	if n < 2 {
		t.Errorf("want demo candidates (herald run / herald lock), found %d", n)
	}
}

// TestComposeWellFormed checks what `docker compose config` would reject or
// silently get wrong.
func TestComposeWellFormed(t *testing.T) {
	c, raw := load(t)
	if c.Name == "" {
		t.Error("no project name")
	}
	hostPorts := map[string]string{}
	for name, s := range c.Services {
		if s.Image == "" && s.Build == nil {
			t.Errorf("%s: neither image nor build", name)
		}
		for dep := range s.DependsOn {
			d, ok := c.Services[dep]
			if !ok {
				t.Errorf("%s depends on unknown service %s", name, dep)
			} else if s.DependsOn[dep].Condition == "service_healthy" && d.Healthcheck == nil {
				t.Errorf("%s waits for %s to be healthy, which has no healthcheck", name, dep)
			}
		}
		for _, p := range s.Ports {
			host, _, _ := strings.Cut(p, ":")
			if other, dup := hostPorts[host]; dup {
				t.Errorf("host port %s used by %s and %s", host, other, name)
			}
			hostPorts[host] = name
		}
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if !strings.HasPrefix(src, ".") && !strings.HasPrefix(src, "/") {
				if _, ok := c.Volumes[src]; !ok {
					t.Errorf("%s: named volume %s is not declared", name, src)
				}
			}
		}
		switch s.Restart {
		case "", "no", "always", "on-failure", "unless-stopped":
		default:
			t.Errorf("%s: restart %q is not a compose restart policy", name, s.Restart)
		}
		durations := []string{s.StopGracePeriod}
		if h := s.Healthcheck; h != nil {
			durations = append(durations, h.Interval, h.Timeout, h.StartPeriod)
			if len(h.Test) < 2 || (h.Test[0] != "CMD" && h.Test[0] != "CMD-SHELL") {
				t.Errorf("%s: healthcheck test %v should start with CMD or CMD-SHELL", name, h.Test)
			}
		}
		for _, d := range durations {
			if _, err := time.ParseDuration(d); d != "" && err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		if s.Build != nil {
			if _, err := os.Stat(filepath.Join("..", s.Build.Context, s.Build.Dockerfile)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	// Compose interpolates $VAR: a shell variable meant for the container
	// must be written $$VAR.
	if i := strings.Index(strings.ReplaceAll(raw, "$$", ""), "$"); i >= 0 {
		t.Errorf("unescaped $ near %q: compose would substitute it; write $$", excerpt(raw, i))
	}
}

func TestDockerfile(t *testing.T) {
	raw, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(raw)
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)(?:\s+AS\s+(\S+))?`).FindAllStringSubmatch(df, -1)
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, found %d FROM lines", len(froms))
	}
	if !strings.HasPrefix(froms[0][1], "golang:") || froms[0][2] == "" {
		t.Errorf("first stage %q should be a named golang stage", froms[0][0])
	}
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(string(gomod)); m == nil || !strings.HasPrefix(froms[0][1], "golang:"+m[1]) {
		t.Errorf("builder %s does not match go.mod's Go version %v", froms[0][1], m)
	}
	last := froms[len(froms)-1][1]
	if !strings.Contains(last, "distroless") && !strings.Contains(last, "slim") {
		t.Errorf("final stage %s: want distroless or debian-slim", last)
	}
	for _, want := range []string{"./cmd/herald", "COPY --from=" + froms[0][2], "/usr/local/bin/herald", "ENTRYPOINT", "CGO_ENABLED=0"} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if !regexp.MustCompile(`(?m)^USER\s+\S+`).MatchString(df) {
		t.Error("Dockerfile runs as root: add a USER")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func mounted(s service, file string) bool {
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && strings.HasPrefix(file, strings.TrimSuffix(parts[1], "/")+"/") {
			return true
		}
	}
	return false
}

func excerpt(s string, i int) string {
	lo, hi := max(0, i-20), min(len(s), i+20)
	return s[lo:hi]
}

// TestCandidatesStopWhenDeposed runs each demo candidate's script (with the
// file's $$ unescaped as compose does) against a stand-in herald whose
// second checkpoint put exits 3, no longer the leader: the script stops
// there with that status, as checkpoint put --help says to. It used to
// ignore the status and go on with its steps.
func TestCandidatesStopWhenDeposed(t *testing.T) {
	c, _ := load(t)
	n := 0
	for name, s := range c.Services {
		i := slices.Index(s.Command, "--")
		if i < 0 || !strings.Contains(strings.Join(s.Command[i+1:], " "), "checkpoint put") {
			continue
		}
		n++
		dir := t.TempDir()
		calls := filepath.Join(dir, "calls")
		fake := map[string]string{
			"herald": "#!/bin/sh\necho \"$*\" >> " + calls + "\n[ $(wc -l < " + calls + ") -lt 2 ] || exit 3\n",
			"sleep":  "#!/bin/sh\nexit 0\n",
		}
		for f, body := range fake {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		args := make([]string, 0, len(s.Command)-i-1)
		for _, a := range s.Command[i+1:] {
			args = append(args, strings.ReplaceAll(a, "$$", "$"))
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "HERALD_ID=" + name, "HERALD_TERM=7"}
		out, err := cmd.CombinedOutput()
		got, _ := os.ReadFile(calls)
		if code := cmd.ProcessState.ExitCode(); code != 3 || strings.Count(string(got), "checkpoint put") != 2 {
			t.Errorf("%s: deposed at its second checkpoint put, the script exited %d (%v) after %q, want 3 right there:\n%s", name, code, err, got, out)
		}
	}
	if n == 0 {
		t.Error("no demo candidate calls herald checkpoint put")
	}
}
