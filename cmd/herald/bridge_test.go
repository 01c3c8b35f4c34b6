package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/nats-io/nats.go"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

func TestBridgeBadInput(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	cfg := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(cfg, []byte("watch: [/a]\nwatchh: /b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	twiceCfg := filepath.Join(t.TempDir(), "twice.yaml")
	if err := os.WriteFile(twiceCfg, []byte("watch: [/a]\nwatch: [/b]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	shardCfg := filepath.Join(t.TempDir(), "shard.yaml")
	if err := os.WriteFile(shardCfg, []byte("watch: [/a]\nshard: 3/2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	httpCfg := filepath.Join(t.TempDir(), "http.yaml")
	if err := os.WriteFile(httpCfg, []byte("watch: [/a]\nnats: nats://127.0.0.1:1\nhttp: \":70000\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bridge"}, "give at least one --watch PATH"},
		{[]string{"bridge", "--watch", "jobs"}, "ZooKeeper path"},
		{[]string{"bridge", "--discover", "/a/"}, "ZooKeeper path"},
		{[]string{"bridge", "--watch", "/a", "--ha", "x"}, "--ha"},
		{[]string{"bridge", "--watch", "/a", "--http", "nope"}, "--http"},
		// refused while the flags are read, not when the listener opens
		// once the sinks are up
		{[]string{"bridge", "--watch", "/a", "--nats", "nats://127.0.0.1:1", "--http", ":99999"}, `--http ":99999": port 99999 is out of range: the port must be 0–65535`},
		{[]string{"bridge", "--watch", "/a", "--nats", "nats://127.0.0.1:1", "--http", "127.0.0.1:-1"}, "the port must be 0–65535"},
		{[]string{"bridge", "--watch", "/a", "--nats", "nats://127.0.0.1:1", "--http", "localhost:metrics-port"}, "is not a port number"},
		{[]string{"bridge", "--config", httpCfg}, "port 70000 is out of range"},
		{[]string{"bridge", "--watch", "/a", "--recipe", "/a=queue"}, "neither election nor lock"},
		{[]string{"bridge", "--watch", "/a", "--nats-mode", "fast"}, "--nats-mode"},
		{[]string{"bridge", "--watch", "/a", "--drain-timeout", "0s"}, "--drain-timeout"},
		{[]string{"bridge", "--watch", "/a", "--ha-replay", "-1s"}, "--ha-replay"},
		{[]string{"bridge", "--watch", "/a", "--group-metrics-limit", "0"}, "--group-metrics-limit"},
		{[]string{"bridge", "--watch", "/a", "--nats", "nats://127.0.0.1:1", "--nats-replicas", "9"}, "replicas 9"},
		{[]string{"bridge", "--watch", "/a", "--nats", "nats://127.0.0.1:1", "--nats-max-age", "1m", "--nats-duplicates", "2m"}, "duplicate window"},
		{[]string{"bridge", "--watch", "/a", "--heartbeat", "1ms"}, "--heartbeat"},
		{[]string{"bridge", "--watch", "/a", "--shard", "2/2"}, "K must be in 0..1"},
		{[]string{"bridge", "--watch", "/a", "--shard", "half"}, "want K/N"},
		{[]string{"bridge", "--watch", "/a", "--shard", "3/2"}, `--shard "3/2": K must be in 0..1 (shards are numbered from 0)`},
		{[]string{"bridge", "--watch", "/a", "--shard", "0/0"}, "N is the number of shards, at least 1"},
		{[]string{"bridge", "--config", shardCfg}, "K must be in 0..1"},
		{[]string{"bridge", "shard-of", "/a"}, "--shards is required: the number of shards the bridges run as"},
		{[]string{"bridge", "shard-of", "--shards", "0", "/a"}, "--shards 0: give the number of shards"},
		{[]string{"bridge", "shard-of", "--shards", "2"}, "give at least one group path"},
		{[]string{"bridge", "shard-of", "--shards", "2", "locks"}, "must start with '/'"},
		{[]string{"bridge", "--watch", "/a", "--preset", "zookeeper"}, "kafka"},
		{[]string{"bridge", "--zk", "127.0.0.1:1"}, "nothing to observe"},
		{[]string{"bridge", "--watch", "/a", "--recipe", "/a/[=lock"}, "path.Match"},
		// one path, two recipes: the last used to win silently
		{[]string{"bridge", "--watch", "/a", "--recipe", "/locks/x=lock", "--recipe", "/locks/x=election"}, "one path, two recipes"},
		{[]string{"bridge", "--discover", "/b/*"}, `--discover "/b/*": a path, not a glob; --discover /b observes every child of /b`},
		{[]string{"bridge", "--discover", "/svc/*/leader"}, "(e.g. --discover /svc)"},
		{[]string{"bridge", "--watch", "/b/lock-?"}, "not a glob"},
		{[]string{"bridge", "--watch", "/a", "--watch", "/a", "--nats", "nats://127.0.0.1:1"}, "give each path once"},
		{[]string{"bridge", "--config", cfg}, `unknown key "watchh"`},
		{[]string{"bridge", "--config", twiceCfg}, `key "watch" given twice`},
		{[]string{"bridge", "--config", filepath.Join(t.TempDir(), "missing.yaml")}, "--config"},
		{[]string{"bridge", "--watch", "/a", "--bogus"}, "--help"},
	} {
		_, stderr, code := heraldRun(t, nil, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("herald %v: exit %d, want %d with %q; stderr: %s", tc.args, code, exitUsage, tc.want, stderr)
		}
	}
	stdout, _, code := heraldRun(t, nil, "bridge", "--help")
	if code != 0 || !strings.Contains(stdout, "Examples:") || !strings.Contains(stdout, "herald bridge --zk") {
		t.Errorf("bridge --help: exit %d, no example:\n%s", code, stdout)
	}
}

// TestBridgeBadConfigStartsNothing: a configuration the bridge refuses
// (here a --recipe glob that matches nothing) is refused before the sinks
// start. Before, the embedded NATS server started first, and the output
// told how to subscribe to a bridge that then exited.
func TestBridgeBadConfigStartsNothing(t *testing.T) {
	store := t.TempDir()
	stdout, stderr, code := heraldRun(t, nil, "bridge", "--zk", "127.0.0.1:1", "--watch", "/a", "--recipe", "/b/*/leader=lock",
		"--nats-listen", "127.0.0.1:0", "--nats-store", store)
	if code != exitUsage || !strings.Contains(stderr, "would never apply") {
		t.Fatalf("exit %d, want %d saying the rule would never apply; stderr: %s", code, exitUsage, stderr)
	}
	if strings.Contains(stdout+stderr, "serving NATS") {
		t.Errorf("the embedded NATS server started for a configuration that was refused:\n%s%s", stdout, stderr)
	}
	if ents, err := os.ReadDir(store); err != nil || len(ents) != 0 {
		t.Errorf("the NATS store was written for a refused configuration: %v, %v", ents, err)
	}
}

var subscribeLine = regexp.MustCompile(`nats sub 'herald\.>' --server (nats://\S+)`)

// TestBridgeEmbeddedNATS runs `herald bridge` with the embedded NATS
// server: it says how to subscribe, a subscriber receives the events, and
// SIGTERM stops it with exit 0 within its drain bound.
func TestBridgeEmbeddedNATS(t *testing.T) {
	zk := zkFlags(t)
	g := uniq(t)
	args := append([]string{"bridge", "--watch", g, "--nats-listen", "127.0.0.1:0", "--nats-store", t.TempDir(),
		"--http", "127.0.0.1:0", "--drain-timeout", "3s"}, zk...)
	p := start(t, nil, args...)
	url := waitMatch(t, p, subscribeLine, 30*time.Second)
	sub := subscribe(t, url, "herald.>")

	s := zkSession(t)
	h := campaign(t, s, g, "worker-1")
	sub.waitID(t, publish.MakeID(g, h.Node(), publish.LeaderElected), 15*time.Second)

	addr := waitMatch(t, p, regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`), 5*time.Second)
	var ready struct {
		Ready bool   `json:"ready"`
		Role  string `json:"role"`
	}
	if code := getJSON(t, "http://"+addr+"/readyz", &ready); code != 200 || !ready.Ready || ready.Role != "active" {
		t.Errorf("/readyz: %d %+v", code, ready)
	}
	if out, stderr, code := heraldRun(t, nil, "bridge", "check", "--url", "http://"+addr+"/readyz"); code != 0 || !strings.Contains(out, "ready: active, all groups, 1 group") {
		t.Errorf("bridge check on a ready bridge: exit %d: %s%s", code, out, stderr)
	}
	// The base address asks /readyz; another path of the bridge, which
	// answers 200 whatever its state, is refused.
	if out, stderr, code := heraldRun(t, nil, "bridge", "check", "--url", "http://"+addr); code != 0 || !strings.Contains(out, "ready: active, all groups, 1 group") {
		t.Errorf("bridge check on the base URL of a ready bridge: exit %d: %s%s", code, out, stderr)
	}
	for _, path := range []string{"/healthz", "/metrics"} {
		if out, stderr, code := heraldRun(t, nil, "bridge", "check", "--url", "http://"+addr+path); code != 1 || !strings.Contains(stderr, "is not a bridge's /readyz") {
			t.Errorf("bridge check on %s: exit %d: %s%s", path, code, out, stderr)
		}
	}

	began := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 10*time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0; output:\n%s", code, p.out)
	}
	if d := time.Since(began); d > 8*time.Second {
		t.Errorf("SIGTERM took %v", d)
	}
	if _, stderr, code := heraldRun(t, nil, "bridge", "check", "--url", "http://"+addr+"/readyz"); code != 1 || !strings.Contains(stderr, "not reachable") {
		t.Errorf("bridge check on a stopped bridge: exit %d: %s", code, stderr)
	}
}

// TestBridgeConfigFile: keys of --config set flags; flags given on the
// command line win.
func TestBridgeConfigFile(t *testing.T) {
	zk := zktest.Shared(t)
	g := uniq(t)
	cfg := filepath.Join(t.TempDir(), "bridge.yaml")
	yaml := fmt.Sprintf(`zk: %s
session-timeout: 2s
watch:
  - %s
source: from-file
nats-listen: "127.0.0.1:0"
nats-store: %s
drain-timeout: 3s
`, zk.ConnectString(), g, t.TempDir())
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, nil, "bridge", "--config", cfg, "--source", "from-flag")
	url := waitMatch(t, p, subscribeLine, 30*time.Second)
	sub := subscribe(t, url, "herald.>")
	h := campaign(t, zkSession(t), g, "w")
	e := sub.waitID(t, publish.MakeID(g, h.Node(), publish.LeaderElected), 15*time.Second)
	if e.Source != "from-flag" {
		t.Errorf("source %q, want the flag's from-flag", e.Source)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, 10*time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
}

// TestBridgeHAKill: two bridge processes on one HA path and an external
// NATS; the active one is killed with SIGKILL; the standby takes over once
// the dead one's session expires, and the HERALD stream misses no state.
func TestBridgeHAKill(t *testing.T) {
	t.Parallel()     // waits on sessions and processes, not the CPU
	zk := zkFlags(t) // 1s sessions: the takeover waits for the expiry
	url := natsserver.Start(t).URL()
	g, ha := uniq(t), uniq(t)+"-ha"
	// Sources are claimed across the shared ZooKeeper: parallel tests name theirs apart.
	sfx := "-" + newRunID()[:8]
	bridgeArgs := func(name string) []string {
		return append([]string{"bridge", "--watch", g, "--ha", ha, "--source", name + sfx, "--nats", url, "--http", "127.0.0.1:0"}, zk...)
	}
	httpAddr := regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`)
	b1 := start(t, nil, bridgeArgs("bridge-1")...)
	addr1 := waitMatch(t, b1, httpAddr, 30*time.Second)
	waitRole(t, addr1, "active")
	b2 := start(t, nil, bridgeArgs("bridge-2")...)
	addr2 := waitMatch(t, b2, httpAddr, 30*time.Second)
	waitRole(t, addr2, "standby")

	stream := streamIDs(t, url, g)
	s := zkSession(t)
	a := campaign(t, s, g, "a")
	stream.waitID(t, publish.MakeID(g, a.Node(), publish.LeaderElected), 15*time.Second)
	bCh := campaignAsync(s, g, "b")
	waitQueue(t, s, g, 2)

	if err := signalPID(b1.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	b1.wait(t, 5*time.Second)
	if err := a.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := <-bCh
	if b == nil {
		t.Fatal("b's campaign failed")
	}
	waitRole(t, addr2, "active")
	stream.waitID(t, publish.MakeID(g, b.Node(), publish.LeaderElected), 15*time.Second)
	if err := b.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	lost := stream.waitID(t, publish.MakeID(g, b.Node(), publish.LeaderLost), 15*time.Second)
	if lost.Source != "bridge-2"+sfx {
		t.Errorf("b's loss published by %q, want bridge-2", lost.Source)
	}
	counts := map[string]int{}
	for _, e := range stream.all() {
		counts[e.ID]++
	}
	for id, n := range counts {
		if n != 1 {
			t.Errorf("event %s stored %d times", id, n)
		}
	}
	_ = b2.cmd.Process.Signal(syscall.SIGTERM)
	if code := b2.wait(t, 15*time.Second); code != 0 {
		t.Errorf("bridge-2 exit %d after SIGTERM", code)
	}
}

// waitMatch waits for re in p's output and returns its first group.
func waitMatch(t *testing.T, p *proc, re *regexp.Regexp, d time.Duration) string {
	t.Helper()
	var m []string
	if err := waitFor(d, func() bool { m = re.FindStringSubmatch(p.out.String()); return m != nil || p.exited() }); err != nil || m == nil {
		t.Fatalf("herald %v never printed %s; output:\n%s", p.cmd.Args[1:], re, p.out)
	}
	return m[1]
}

// getBody returns the status and body at url.
func getBody(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	code, body := getBody(t, url)
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: not JSON: %v\n%s", url, err, body)
	}
	return code
}

func waitRole(t *testing.T, addr, role string) {
	t.Helper()
	var st struct {
		Role string `json:"role"`
	}
	if err := waitFor(20*time.Second, func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&st) == nil && st.Role == role && resp.StatusCode == 200
	}); err != nil {
		t.Fatalf("bridge on %s never ready as %s (last role %q)", addr, role, st.Role)
	}
}

func zkSession(t *testing.T) *elect.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := elect.NewSession(ctx, zktest.Shared(t).Addrs(), elect.WithSessionTimeout(4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func campaignAsync(s *elect.Session, g, id string) <-chan *elect.Handle {
	out := make(chan *elect.Handle, 1)
	go func() {
		el, err := elect.NewElection(s, g, elect.CreateParents())
		if err != nil {
			out <- nil
			return
		}
		h, err := el.Campaign(context.Background(), id)
		if err != nil {
			h = nil
		}
		out <- h
	}()
	return out
}

func campaign(t *testing.T, s *elect.Session, g, id string) *elect.Handle {
	t.Helper()
	select {
	case h := <-campaignAsync(s, g, id):
		if h == nil {
			t.Fatalf("campaign in %s failed", g)
		}
		return h
	case <-time.After(15 * time.Second):
		t.Fatalf("%s did not lead %s within 15s", id, g)
	}
	return nil
}

func waitQueue(t *testing.T, s *elect.Session, g string, n int) {
	t.Helper()
	if err := waitFor(10*time.Second, func() bool {
		v, err := elect.ReadGroup(context.Background(), s, g)
		return err == nil && len(v.Queue) == n
	}); err != nil {
		t.Fatalf("%s never had %d candidates", g, n)
	}
}

// events gathers decoded events.
type events struct {
	mu  sync.Mutex
	got []publish.Event
}

func (e *events) add(ev publish.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, ev)
}

func (e *events) all() []publish.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]publish.Event(nil), e.got...)
}

func (e *events) waitID(t *testing.T, id string, d time.Duration) publish.Event {
	t.Helper()
	var found publish.Event
	if err := waitFor(d, func() bool {
		for _, ev := range e.all() {
			if ev.ChangeID() == id { // a sighting of the owner tells its change too
				found = ev
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("event %s never arrived; got %d events: %+v", id, len(e.all()), e.all())
	}
	return found
}

func subscribe(t *testing.T, url, subject string) *events {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	ev := &events{}
	if _, err := nc.Subscribe(subject, func(m *nats.Msg) {
		if e, err := natssink.Decode(m); err == nil {
			ev.add(e)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return ev
}

// streamIDs reads every event of group stored in the HERALD stream.
func streamIDs(t *testing.T, url, group string) *events {
	t.Helper()
	js := natsserver.JetStream(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	es, err := jetstream.Events(ctx, js, group, jetstream.Raw())
	if err != nil {
		cancel()
		t.Fatalf("read the HERALD stream: %v", err)
	}
	ev := &events{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range es.Events() {
			ev.add(e)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ev
}

// Secrets can come from files, so nothing secret needs argv: a bridge logs
// in to NATS with --nats-password-file; a wrong or missing file, or a
// value and a file both, is a usage error naming the flag.
func TestBridgeSecretFromFile(t *testing.T) {
	zk := zkFlags(t)
	url := natsserver.Start(t, natsserver.WithUser("herald", "s3cret pw")).URL()
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("s3cret pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := uniq(t)
	p := start(t, nil, append([]string{"bridge", "--watch", g, "--nats", url, "--nats-mode", "core", "--nats-user", "herald",
		"--nats-password-file", pw, "--http", "127.0.0.1:0"}, zk...)...)
	waitRole(t, waitMatch(t, p, regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`), 30*time.Second), "active")
	if strings.Contains(strings.Join(p.cmd.Args, " "), "s3cret") {
		t.Fatal("the password is on the command line")
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	twoLines, blanks := filepath.Join(dir, "two-lines"), filepath.Join(dir, "blanks")
	if os.WriteFile(twoLines, []byte("s3cret\nother\n"), 0o600) != nil || os.WriteFile(blanks, []byte("s3cret \n"), 0o600) != nil {
		t.Fatal("write the secret files")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nats-password-file", filepath.Join(dir, "missing")}, "--nats-password-file"},
		{[]string{"--nats-password-file", empty}, "is empty"},
		{[]string{"--nats-password-file", twoLines}, "more than one line"},
		{[]string{"--nats-password-file", blanks}, "blanks before or after"},
		{[]string{"--zk-auth-file", twoLines}, "more than one line"},
		{[]string{"--zk-auth-file", blanks}, "digest credentials cannot begin or end with a blank"}, // HERALD_ZK_AUTH trims them too
		{[]string{"--nats-password", "x", "--nats-password-file", pw}, "both given"},
		{[]string{"--kafka-password-file", filepath.Join(dir, "missing")}, "--kafka-password-file"},
	} {
		_, stderr, code := heraldRun(t, nil, append([]string{"bridge", "--watch", "/a", "--zk", "127.0.0.1:1"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "s3cret") {
			t.Errorf("bridge %v: exit %d, want 2 saying %q (and no secret): %s", tc.args, code, tc.want, stderr)
		}
	}
}

// TestBridgeEmbeddedNATSPortTaken: a port already in use (another bridge's
// embedded NATS) fails the bridge at once, saying so, instead of after the
// server's readiness wait.
func TestBridgeEmbeddedNATSPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	began := time.Now()
	_, stderr, code := heraldRun(t, nil, append(zkFlags(t), "bridge", "--watch", uniq(t), "--nats-listen", ln.Addr().String(), "--nats-store", t.TempDir())...)
	if code == 0 || !strings.Contains(stderr, "cannot listen on "+ln.Addr().String()) || strings.Count(stderr, "--nats-listen") != 1 {
		t.Fatalf("bridge on a taken NATS port: exit %d, want a failure naming the port once:\n%s", code, stderr)
	}
	if d := time.Since(began); d > 8*time.Second {
		t.Errorf("the bridge took %v to say the port was taken", d)
	}
}

// TestBridgeEmbeddedNATSBeyondLoopbackWarns: the embedded NATS server takes
// no credentials, so one listening beyond loopback (what consumers on other
// hosts need) lets anyone read and forge events and owners; the bridge
// says so in a WARN line. It used to say nothing. On loopback it does not.
func TestBridgeEmbeddedNATSBeyondLoopbackWarns(t *testing.T) {
	const warn = "the embedded NATS server listens beyond loopback"
	for _, c := range []struct {
		listen string
		warns  bool
	}{{"0.0.0.0:0", true}, {"127.0.0.1:0", false}, {"localhost:0", false}} {
		args := append([]string{"bridge", "--watch", uniq(t), "--nats-listen", c.listen, "--nats-store", t.TempDir()}, zkFlags(t)...)
		p := start(t, nil, args...)
		p.waitOutput(t, "embedded NATS server with JetStream", 30*time.Second)
		out := p.out.String()
		if got := strings.Contains(out, "level=WARN msg=\""+warn); got != c.warns {
			t.Errorf("--nats-listen %s: warned %v, want %v:\n%s", c.listen, got, c.warns, out)
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		p.wait(t, 10*time.Second)
	}
}

func TestBeyondLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"": true, "0.0.0.0": true, "::": true, "10.1.2.3": true, "192.0.2.1": true,
		"127.0.0.1": false, "127.0.0.2": false, "::1": false, "localhost": false,
		"no-such-host.invalid": true,
	} {
		if got := beyondLoopback(context.Background(), host); got != want {
			t.Errorf("beyondLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestBridgeWarnsOfALeaderWithoutItsParent: a --leader whose parent does
// not exist (Kafka's /controller given without its chroot) was observed
// and published as having no leader, the bridge ready, without a word
// (found by a review). It now warns, naming the missing parent and the
// chroot to check; a --leader whose parent exists gets no such warning.
func TestBridgeWarnsOfALeaderWithoutItsParent(t *testing.T) {
	zk := zkFlags(t)
	root := uniq(t)
	mkpath(t, rawZK(t), root)
	missing, there := root+"/kafka/controller", root+"/controller"
	log := filepath.Join(t.TempDir(), "audit.log")
	br := start(t, nil, append([]string{"bridge", "--leader", missing, "--leader", there, "--audit", log, "--nats-listen", "127.0.0.1:0", "--nats-store", t.TempDir()}, zk...)...)
	br.waitOutput(t, "the parent of a --leader does not exist", 20*time.Second)
	out := br.out.String()
	if !strings.Contains(out, "missing="+root+"/kafka") || !strings.Contains(out, "zookeeper.connect=zk1:2181/kafka") {
		t.Errorf("the warning does not name the missing parent and the chroot to check:\n%s", out)
	}
	if strings.Contains(out, "leader="+there+" ") {
		t.Errorf("a --leader whose parent exists was warned of:\n%s", out)
	}
}

// TestBridgeSaysWhyANodeIsNoLeader: a node at a --leader path that herald
// does not take for a leader's (a persistent node written by an operator,
// or HBase's master put back by a restore) was published as no owner
// without a word, while zkCli showed it there naming a leader. The bridge
// now warns, naming the node and why, and the events' note says it.
func TestBridgeSaysWhyANodeIsNoLeader(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	flags := zkFlags(t)
	root := uniq(t)
	c := rawZK(t)
	mkpath(t, c, root)
	leader := root + "/leader"
	if _, err := c.Create(leader, []byte("host1:8080"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "audit.log")
	br := start(t, nil, append([]string{"bridge", "--leader", leader, "--audit", log, "--nats-listen", "127.0.0.1:0", "--nats-store", t.TempDir()}, flags...)...)
	br.waitOutput(t, "is not taken for a leader's", 20*time.Second)
	if out := br.out.String(); !strings.Contains(out, "node="+leader) || !strings.Contains(out, "persistent (no session holds it)") {
		t.Errorf("the warning does not name the node and why:\n%s", out)
	}
	var note string
	if err := waitFor(10*time.Second, func() bool {
		b, _ := os.ReadFile(log)
		for _, line := range strings.Split(string(b), "\n") {
			var e publish.Event
			if json.Unmarshal([]byte(line), &e) == nil && e.Group == leader && e.Owner == nil {
				note = e.Note
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no event for %s: %v", leader, err)
	}
	if !strings.Contains(note, leader+" is not taken for a leader's node") || !strings.Contains(note, "persistent") {
		t.Errorf("the no-owner event of a persistent node at a leader's path notes %q; want it to say why", note)
	}
}
