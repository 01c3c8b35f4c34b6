package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

func TestUnknownSubcommandAndFlagExit2(t *testing.T) {
	for _, args := range [][]string{
		{"frobnicate"},
		{"--no-such-flag"},
		{"who", "--no-such-flag", "/x"},
		{"run", "--election", "/x", "--bogus", "--", "true"},
	} {
		_, stderr, code := heraldRun(t, nil, args...)
		if code != exitUsage {
			t.Errorf("herald %v: exit %d, want %d; stderr: %s", args, code, exitUsage, stderr)
		}
		if !strings.Contains(stderr, "--help") {
			t.Errorf("herald %v: stderr does not point to --help: %s", args, stderr)
		}
	}
}

func TestEveryCommandHelpShowsAnExample(t *testing.T) {
	for _, c := range [][]string{{"run"}, {"lock"}, {"who"}, {"tail"}, {"history"}, {"demo"}, {"checkpoint"}, {"checkpoint", "put"}, {"checkpoint", "get"}} {
		stdout, stderr, code := heraldRun(t, nil, append(c, "--help")...)
		if code != 0 || !strings.Contains(stdout, "Examples:") || !strings.Contains(stdout, "herald "+strings.Join(c, " ")) {
			t.Errorf("herald %v --help: exit %d, no example in:\n%s%s", c, code, stdout, stderr)
		}
	}
}

func TestMalformedPathsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"who", "jobs/nightly"},
		{"who", "/jobs//nightly"},
		{"run", "--election", "/jobs/", "--", "true"},
		{"lock", "--lock", "relative", "--", "true"},
		{"history", "/a/../b", "--audit", "x"},
		{"tail", "no-slash", "--nats", "nats://127.0.0.1:1"},
		{"checkpoint", "get", "--election", "x"},
		{"checkpoint", "get", "x"},
	} {
		_, stderr, code := heraldRun(t, nil, args...)
		if code != exitUsage || !strings.Contains(stderr, "ZooKeeper path") {
			t.Errorf("herald %v: exit %d, want 2 with a path error; stderr: %s", args, code, stderr)
		}
	}
}

// TestCheckpointGetNamesWhatWasGiven: a malformed election path is named
// as the user gave it: the argument, --election or HERALD_ELECTION.
func TestCheckpointGetNamesWhatWasGiven(t *testing.T) {
	for _, tc := range []struct {
		env       []string
		args      []string
		want, not string
	}{
		{nil, []string{"checkpoint", "get", "/"}, "PATH: ", "--election"},
		{nil, []string{"checkpoint", "get", "--election", "/"}, "--election: ", "PATH"},
		{[]string{"HERALD_ELECTION=/"}, []string{"checkpoint", "get"}, "HERALD_ELECTION: ", "--election"},
		{[]string{"HERALD_ELECTION=/jobs/x"}, []string{"checkpoint", "get", "/jobs/"}, "PATH: ", "HERALD_ELECTION"},
	} {
		_, stderr, code := heraldRun(t, tc.env, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, tc.not) {
			t.Errorf("%v herald %v: exit %d, want 2 naming %q, not %q; stderr: %s", tc.env, tc.args, code, tc.want, tc.not, stderr)
		}
	}
}

func TestMissingRequiredInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--", "true"}, "--election is required"},
		{[]string{"run", "--election", "/x"}, "no command given"},
		{[]string{"lock", "--", "true"}, "--lock is required"},
		// a path where the command goes: the likely line is named
		{[]string{"lock", "/locks/backup", "--", "./backup.sh"}, "herald lock --lock /locks/backup -- ./backup.sh"},
		{[]string{"run", "/jobs/nightly"}, "herald run --election /jobs/nightly -- ./job.sh"},
		// flags after the path belong before the --, not in the command
		{[]string{"lock", "/locks/a", "--timeout", "1s", "--", "echo", "hi"}, "write herald lock --lock /locks/a --timeout 1s -- echo hi"},
		// the line is one to paste: words the shell would split or expand are quoted
		{[]string{"lock", "/locks/a", "--", "sh", "-c", "echo held; sleep 1", "it's", ""}, `write herald lock --lock /locks/a -- sh -c 'echo held; sleep 1' 'it'\''s' ''`},
		{[]string{"run", "/jobs/nightly", "--rejoin", "./job.sh"}, "herald run --election /jobs/nightly, then herald's flags, then -- and the command"},
		{[]string{"checkpoint", "get"}, "herald checkpoint get PATH"},
		// Kafka's zookeeper.connect, chroot and all
		{[]string{"--zk", "zk1:2181,zk2:2181/kafka", "who", "/controller"}, "give the servers alone (--zk zk1:2181,zk2:2181) and the full paths below the chroot (/kafka/controller"},
		// a trailing "/" is no chroot: not called one, with nothing named
		{[]string{"--zk", "zk1:2181/", "who", "/controller"}, `ends in "/", which herald does not take: give the servers alone (--zk zk1:2181)`},
		// no server at all: said so, not as an entry "" missing its port
		{[]string{"--zk", "", "who", "/controller"}, "--zk is empty: give host:port[,host:port...] (or set HERALD_ZK)"},
		{[]string{"--zk", " , ", "who", "/controller"}, "--zk is empty"},
		// a URL's scheme, as other clients take: named, with the line to give
		{[]string{"--zk", "zk://zk1:2181,zk2:2181", "who", "/controller"}, `"zk://zk1:2181" has a scheme (zk://), which --zk does not take: give host:port alone (--zk zk1:2181,zk2:2181)`},
		{[]string{"checkpoint", "get", "/a", "/b"}, "one election path"},
		{[]string{"checkpoint", "get", "/a", "--election", "/b"}, "give one"},
		{[]string{"checkpoint", "put", "x"}, "herald run"},
		{[]string{"tail"}, "--nats"},
		{[]string{"history"}, "--audit"},
		{[]string{"who", "/x", "--nats", "nats://a:1", "--kafka", "b:1"}, "not both"},
		// an address that is no NATS URL, refused by readers as by the bridge
		{[]string{"who", "/x", "--nats", "http://127.0.0.1:4222"}, `scheme "http"`},
		{[]string{"tail", "--nats", "nats://127.0.0.1:99999"}, "not a port number"},
		{[]string{"lock", "--lock", "/x", "--dialect", "zookeeper", "--", "true"}, "curator-lock, curator-latch, kazoo"},
		{[]string{"run", "--election", "/x", "--dialect", "Kazoo", "--", "true"}, "unknown dialect"},
		// a session root in the group, the top, or no path at all
		{[]string{"lock", "--lock", "/locks/a", "--session-root", "/locks/a/s", "--", "true"}, "inside --lock /locks/a, which may hold only queue nodes"},
		{[]string{"run", "--election", "/jobs/x", "--session-root", "/", "--", "true"}, "give an absolute path below /"},
		{[]string{"lock", "--lock", "/locks/a", "--session-root", "sessions", "--", "true"}, "give an absolute path below /"},
		// a grace of nothing: what to give for a SIGKILL at once
		{[]string{"lock", "--lock", "/locks/a", "--grace", "0", "--", "true"}, "--grace 1ms"},
		{[]string{"run", "--election", "/jobs/x", "--grace", "-1s", "--", "true"}, "between SIGTERM and SIGKILL"},
	} {
		_, stderr, code := heraldRun(t, nil, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("herald %v: exit %d, want 2 saying %q; stderr: %s", tc.args, code, tc.want, stderr)
		}
	}
}

// TestCgroupSettingThatSaysNeither: an HERALD_CGROUP that is neither on
// nor off is refused before any campaign, naming the value and both
// choices, where it used to pass silently for on; the accepted spellings
// pass the check.
func TestCgroupSettingThatSaysNeither(t *testing.T) {
	for _, v := range []string{"of", "disabled", "2"} {
		env := []string{"HERALD_CGROUP=" + v}
		for _, args := range [][]string{
			{"run", "--election", "/jobs/x", "--", "true"},
			{"lock", "--lock", "/locks/a", "--", "true"},
		} {
			_, stderr, code := heraldRun(t, env, args...)
			if code != exitUsage || !strings.Contains(stderr, "HERALD_CGROUP=\""+v+"\"") || !strings.Contains(stderr, "give off") {
				t.Errorf("%v herald %v: exit %d, want 2 naming the value and the choices; stderr: %s", env, args, code, stderr)
			}
		}
	}
	for _, v := range []string{"", "on", "OFF", "0", "true", "No", " yes "} {
		t.Setenv("HERALD_CGROUP", v)
		if _, err := cgroupSetting(); err != nil {
			t.Errorf("HERALD_CGROUP=%q refused: %v", v, err)
		}
	}
}

func TestChildThatCannotStart(t *testing.T) {
	_, stderr, code := heraldRun(t, nil, "run", "--election", "/x", "--", "/no/such/command")
	if code != exitNotFound || !strings.Contains(stderr, "/no/such/command") {
		t.Errorf("missing command: exit %d, want %d naming it; stderr: %s", code, exitNotFound, stderr)
	}
	plain := filepath.Join(t.TempDir(), "not-executable")
	if err := os.WriteFile(plain, []byte("echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = heraldRun(t, nil, "lock", "--lock", "/x", "--", plain)
	if code != exitCannotExec {
		t.Errorf("non-executable command: exit %d, want %d; stderr: %s", code, exitCannotExec, stderr)
	}
}

func TestUnreachableZooKeeperNamesTheServers(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	_, stderr, code := heraldRun(t, nil, "--zk", addr, "--connect-timeout", "500ms", "who", "/x")
	if code != exitUnreachable || !strings.Contains(stderr, addr) || !strings.Contains(stderr, "unreachable") {
		t.Errorf("exit %d, want %d naming %s as unreachable; stderr: %s", code, exitUnreachable, addr, stderr)
	}
}

func TestEnvironmentSetsFlags(t *testing.T) {
	_, stderr, code := heraldRun(t, []string{"HERALD_LOG_LEVEL=loud"}, "who", "/x")
	if code != exitUsage || !strings.Contains(stderr, "HERALD_LOG_LEVEL") && !strings.Contains(stderr, "loud") {
		t.Errorf("bad HERALD_LOG_LEVEL: exit %d, stderr: %s", code, stderr)
	}
}

// TestVersion: herald --version and herald version print the same line:
// the module version, the VCS revision (when the go command stamped one)
// and the Go version; -ldflags -X main.version sets a release's version.
func TestVersion(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	out, stderr, code := heraldRun(t, nil, "--version")
	out2, _, code2 := heraldRun(t, nil, "version")
	if code != 0 || code2 != 0 || !strings.HasPrefix(out, "herald ") || !strings.Contains(out, runtime.Version()) || out != out2 {
		t.Errorf("--version: exit %d %q %s; version: exit %d %q", code, out, stderr, code2, out2)
	}
	out, _, code = heraldRun(t, nil, "version", "--json")
	var v struct {
		Version   string `json:"version"`
		GoVersion string `json:"go_version"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 || v.Version == "" || v.GoVersion != runtime.Version() {
		t.Errorf("version --json: exit %d, %v: %s", code, err, out)
	}

	// A release build: the version from -ldflags, the revision from git.
	bin := filepath.Join(t.TempDir(), "herald")
	build := exec.Command("go", "build", "-buildvcs=auto", "-ldflags", "-X main.version=v9.8.7", "-o", bin, ".")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	b, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(b), "herald v9.8.7 (") {
		t.Fatalf("release build --version: %v %q", err, b)
	}
	if rev, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil && len(rev) > 12 {
		if !strings.Contains(string(b), "revision "+string(rev[:12])) {
			t.Errorf("release build --version %q: want revision %s", b, rev[:12])
		}
	}
}

// TestBuildInfoOverride: -X main.commit replaces the stamped revision.
func TestBuildInfoOverride(t *testing.T) {
	defer func(v, c string) { version, commit = v, c }(version, commit)
	version, commit = "v1.0.0", "0123456789abcdef"
	b := buildInfo()
	if b.Version != "v1.0.0" || b.Revision != "0123456789abcdef" || b.Modified || b.Time != "" {
		t.Errorf("buildInfo %+v", b)
	}
	if l := versionLine(); !strings.HasPrefix(l, "herald v1.0.0 (revision 0123456789ab; go") {
		t.Errorf("versionLine %q", l)
	}
}

// TestWhoExitCodes: 0 an owner, 5 no owner (ZooKeeper, NATS; text and
// JSON), 1 a server that cannot be reached.
func TestWhoExitCodes(t *testing.T) {
	zk := zkFlags(t)
	l := uniq(t)
	script := `"$HERALD_BIN" who --zk "$HERALD_ZK" "$HERALD_LOCK"`
	out, stderr, code := heraldRun(t, nil, append(zk, "lock", "--lock", l, "--", "sh", "-c", script)...)
	if code != 0 || !strings.Contains(out, "owner") {
		t.Errorf("who while the lock is held: exit %d:\n%s%s", code, out, stderr)
	}
	out, stderr, code = heraldRun(t, nil, append(zk, "who", l)...)
	if code != exitNoOwner || !strings.Contains(out, "no owner") || stderr != "" {
		t.Errorf("who after the release: exit %d (want %d):\n%s%s", code, exitNoOwner, out, stderr)
	}
	out, _, code = heraldRun(t, nil, append(zk, "who", l, "--json")...)
	if code != exitNoOwner || !strings.Contains(out, `"owner":null`) {
		t.Errorf("who --json after the release: exit %d (want %d): %s", code, exitNoOwner, out)
	}

	srv := natsserver.Start(t)
	js, err := jetstream.New(jetstream.Config{Conn: natssink.Options{URL: srv.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { js.Close() })
	write(t, js, story(l)...)
	// "No owner" of a group the bucket holds nothing of takes a bridge
	// that confirms it (with no heartbeat stored, the owner is unknown:
	// TestWhoBeforeAnyHeartbeatIsNotNoOwner).
	hctx, hcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer hcancel()
	hb := publish.Heartbeat{Source: "test", State: publish.BridgeActive, Time: time.Now(), Interval: time.Minute}
	hb.Confirmed = hb.Time
	if err := js.WriteHeartbeat(hctx, hb); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = heraldRun(t, nil, "who", l+"-nobody", "--nats", srv.URL())
	if code != exitNoOwner || !strings.Contains(out, "no owner") {
		t.Errorf("who --nats, no owner: exit %d (want %d): %s%s", code, exitNoOwner, out, stderr)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, stderr, code = heraldRun(t, nil, "who", l, "--nats", "nats://"+addr)
	if code != exitUnreachable {
		t.Errorf("who --nats at a closed port: exit %d (want %d): %s", code, exitUnreachable, stderr)
	}
}

// TestOneShotCommandsLogWarningsOnly: who --nats says nothing on stderr
// about connecting unless --log-level (or HERALD_LOG_LEVEL) asks for it.
func TestOneShotCommandsLogWarningsOnly(t *testing.T) {
	srv := natsserver.Start(t)
	js, err := jetstream.New(jetstream.Config{Conn: natssink.Options{URL: srv.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { js.Close() })
	g := uniq(t)
	write(t, js, story(g)...)
	args := []string{"who", g, "--nats", srv.URL()}
	out, stderr, code := heraldRun(t, nil, args...)
	if code != 0 || stderr != "" || !strings.Contains(out, "owner bravo") {
		t.Errorf("who --nats: exit %d, want a quiet stderr:\n%s%s", code, out, stderr)
	}
	if _, stderr, _ := heraldRun(t, nil, append(args, "--log-level", "info")...); !strings.Contains(stderr, "level=INFO") {
		t.Errorf("who --nats --log-level info logged no INFO line: %s", stderr)
	}
	if _, stderr, _ := heraldRun(t, []string{"HERALD_LOG_LEVEL=info"}, args...); !strings.Contains(stderr, "level=INFO") {
		t.Errorf("who --nats with HERALD_LOG_LEVEL=info logged no INFO line: %s", stderr)
	}
	if _, stderr, _ := heraldRun(t, nil, "history", g, "--nats", srv.URL()); strings.Contains(stderr, "level=INFO") {
		t.Errorf("history --nats logged INFO: %s", stderr)
	}
}

// TestUsageMessages: an unknown global flag is named as such; a bad
// environment value is said once; lock without a command shows a lock
// line.
func TestUsageMessages(t *testing.T) {
	for _, args := range [][]string{{"--bogus", "who", "/x"}, {"--zk", "a:1", "-Q", "who", "/x"}} {
		_, stderr, code := heraldRun(t, nil, args...)
		if code != exitUsage || !strings.Contains(stderr, "unknown flag: "+args[len(args)-3]) || strings.Contains(stderr, "unknown command") {
			t.Errorf("herald %v: exit %d: %s", args, code, stderr)
		}
	}
	_, stderr, code := heraldRun(t, []string{"HERALD_CONNECT_TIMEOUT=abc"}, "who", "/x")
	if code != exitUsage || strings.Count(stderr, `HERALD_CONNECT_TIMEOUT="abc"`) != 1 {
		t.Errorf("bad HERALD_CONNECT_TIMEOUT: exit %d, want it said once: %s", code, stderr)
	}
	_, stderr, code = heraldRun(t, nil, "lock", "--lock", "/locks/x")
	if code != exitUsage || !strings.Contains(stderr, "herald lock --lock /locks/x -- ") || strings.Contains(stderr, "herald run") {
		t.Errorf("lock without a command: exit %d: %s", code, stderr)
	}
	// ZooKeeper settings no server could take are usage errors, not a
	// server that cannot be reached.
	for _, tc := range []struct{ args []string }{
		{[]string{"--zk", "127.0.0.1", "who", "/x"}},
		{[]string{"--zk", "zk1:2181,zk2", "who", "/x"}},
		{[]string{"--zk", "zk1:http", "who", "/x"}},
		{[]string{"--session-timeout", "50ms", "who", "/x"}},
		{[]string{"--session-timeout", "1h", "lock", "--lock", "/x", "--", "true"}},
	} {
		_, stderr, code := heraldRun(t, nil, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.args[0]) {
			t.Errorf("herald %v: exit %d, want 2 naming %s: %s", tc.args, code, tc.args[0], stderr)
		}
	}
}

// A one-shot command fails within a few seconds when ZooKeeper does not
// answer, and at once when its host name does not exist; --connect-timeout
// bounds the wait, retries included.
func TestFastHonestFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		args []string
		code int
		max  time.Duration
		want string
	}{
		{[]string{"--zk", closed, "who", "/x"}, exitUnreachable, 3*time.Second + 2*time.Second, "gave up after the connect timeout, 3s"},
		{[]string{"--zk", closed, "--connect-timeout", "1s", "lock", "--lock", "/x", "--", "true"}, exitUnreachable, 1*time.Second + 2*time.Second, "gave up after the connect timeout, 1s"},
		{[]string{"--zk", closed, "--connect-timeout", "1s", "run", "--election", "/x", "--", "true"}, exitUnreachable, 1*time.Second + 2*time.Second, "gave up after the connect timeout, 1s"},
		{[]string{"--zk", "no-such-host.invalid:2181", "who", "/x"}, exitUnreachable, 2 * time.Second, "no such host: no-such-host.invalid"},
		// the other reading commands exit as who does
		{[]string{"--zk", closed, "--connect-timeout", "1s", "checkpoint", "get", "/x"}, exitUnreachable, 1*time.Second + 2*time.Second, "gave up after the connect timeout, 1s"},
		{[]string{"tail", "--nats", "nats://" + closed}, exitUnreachable, 5 * time.Second, "no servers available"},
		{[]string{"history", "--kafka", closed}, exitUnreachable, 5 * time.Second, "brokers unreachable"},
		// a bridge whose sink does not answer at start
		{[]string{"--zk", closed, "--connect-timeout", "1s", "bridge", "--watch", "/x", "--nats", "nats://" + closed}, exitUnreachable, 1*time.Second + 3*time.Second, "sink unreachable"},
	} {
		began := time.Now()
		_, stderr, code := heraldRun(t, nil, tc.args...)
		if d := time.Since(began); code != tc.code || d > tc.max || !strings.Contains(stderr, tc.want) {
			t.Errorf("herald %v: exit %d after %v (want %d within %v saying %q): %s", tc.args, code, d.Round(time.Millisecond), tc.code, tc.max, tc.want, stderr)
		}
	}
	if _, stderr, code := heraldRun(t, nil, "--connect-timeout", "-1s", "who", "/x"); code != exitUsage || !strings.Contains(stderr, "--connect-timeout") {
		t.Errorf("a negative --connect-timeout: exit %d: %s", code, stderr)
	}
}

// TestConnectTimeoutMustBePositive: --connect-timeout 0 (on the command
// line, in HERALD_CONNECT_TIMEOUT or in a bridge's --config) is a usage
// error, not the default in disguise; left out, the default holds.
func TestConnectTimeoutMustBePositive(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "bridge.yaml")
	if err := os.WriteFile(cfg, []byte("watch: [/a]\nnats: nats://127.0.0.1:1\nconnect-timeout: 0s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"--zk", "127.0.0.1:1", "--connect-timeout", "0", "who", "/x"}},
		{nil, []string{"--zk", "127.0.0.1:1", "--connect-timeout", "0s", "lock", "--lock", "/x", "--", "true"}},
		{[]string{"HERALD_CONNECT_TIMEOUT=0s"}, []string{"--zk", "127.0.0.1:1", "who", "/x"}},
		{nil, []string{"--zk", "127.0.0.1:1", "bridge", "--config", cfg}},
	} {
		_, stderr, code := heraldRun(t, tc.env, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, "--connect-timeout 0s: give a positive duration") {
			t.Errorf("%v herald %v: exit %d, want %d refusing --connect-timeout 0; stderr: %s", tc.env, tc.args, code, exitUsage, stderr)
		}
	}
	_, stderr, code := heraldRun(t, []string{"HERALD_CONNECT_TIMEOUT="}, "--zk", "127.0.0.1:1", "who", "/x")
	if code != exitUnreachable || !strings.Contains(stderr, "gave up after the connect timeout, 3s") {
		t.Errorf("no --connect-timeout: exit %d, want %d after the default 3s; stderr: %s", code, exitUnreachable, stderr)
	}
}

// Every command that talks to NATS or Kafka takes the same connection
// flags, with the same names.
func TestOneSetOfConnectionFlags(t *testing.T) {
	nats := []string{"--nats-user", "--nats-password", "--nats-password-file", "--nats-token", "--nats-token-file", "--nats-nkey", "--nats-creds", "--nats-ca", "--nats-cert", "--nats-key"}
	kafka := []string{"--kafka-sasl", "--kafka-user", "--kafka-password", "--kafka-password-file", "--kafka-tls", "--kafka-ca", "--kafka-cert", "--kafka-key", "--kafka-partitioner"}
	for _, c := range []struct {
		cmd   []string
		kafka bool
	}{{[]string{"bridge"}, true}, {[]string{"who"}, true}, {[]string{"tail"}, true}, {[]string{"history"}, true}, {[]string{"run"}, false}, {[]string{"lock"}, false}} {
		out, _, _ := heraldRun(t, nil, append(c.cmd, "--help")...)
		want := nats
		if c.kafka {
			want = append(append([]string(nil), nats...), kafka...)
		}
		for _, f := range want {
			if !strings.Contains(out, f+" ") {
				t.Errorf("herald %v --help lacks %s", c.cmd, f)
			}
		}
	}
}

// who logs in to a NATS server that wants a user and password, the
// password from a file, as the bridge does.
func TestWhoLogsInToNATS(t *testing.T) {
	srv := natsserver.Start(t, natsserver.WithUser("reader", "pw"))
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := heraldRun(t, nil, "who", "/x", "--nats", srv.URL(), "--nats-user", "reader", "--nats-password-file", pw)
	// Logged in: the server has no owners bucket yet, which who says.
	if code == exitUnreachable || strings.Contains(stderr, "Authorization") || !strings.Contains(stderr, "bucket") {
		t.Errorf("who with credentials: exit %d: %s", code, stderr)
	}
	_, stderr, code = heraldRun(t, nil, "who", "/x", "--nats", srv.URL(), "--nats-user", "reader", "--nats-password", "wrong")
	if code == 0 || !strings.Contains(strings.ToLower(stderr), "authorization") {
		t.Errorf("who with a wrong password: exit %d: %s", code, stderr)
	}
	// From the environment, with the trailing line break a secret store
	// or a heredoc leaves: taken without it, as from the file (it was
	// sent with it, and refused).
	_, stderr, code = heraldRun(t, []string{"HERALD_NATS_PASSWORD=pw\n"}, "who", "/x", "--nats", srv.URL(), "--nats-user", "reader")
	if code == exitUnreachable || strings.Contains(stderr, "Authorization") || !strings.Contains(stderr, "bucket") {
		t.Errorf("who with HERALD_NATS_PASSWORD ending in a line break: exit %d: %s", code, stderr)
	}
	_, stderr, code = heraldRun(t, []string{"HERALD_NATS_PASSWORD=pw\nsecond-line"}, "who", "/x", "--nats", srv.URL(), "--nats-user", "reader")
	if code != exitUsage || strings.Contains(stderr, "second-line") {
		t.Errorf("who with a two-line HERALD_NATS_PASSWORD: exit %d: %s; want exit %d, the secret not shown", code, stderr, exitUsage)
	}
}

// A path with a character above U+FFFF (an emoji) is one ZooKeeper
// refuses, as it refuses U+FFFE: it checks UTF-16 chars, where such a
// character is a surrogate pair. herald says which character, exit 2,
// before it asks the server.
func TestPathOutsideBMPIsUsageError(t *testing.T) {
	zkFl := zkFlags(t)
	g := uniq(t) + "/\U0001f512"
	mkpath(t, rawZK(t), path.Dir(g))
	if _, err := rawZK(t).Create(g, nil, 0, zk.WorldACL(zk.PermAll)); err == nil {
		t.Fatalf("ZooKeeper created %q; the check would refuse a path the server takes", g)
	}
	for _, args := range [][]string{
		{"lock", "--lock", g, "--", "true"},
		{"run", "--election", g, "--", "true"},
		{"who", g},
		{"checkpoint", "get", g},
	} {
		_, stderr, code := heraldRun(t, nil, append(zkFl, args...)...)
		if code != exitUsage || !strings.Contains(stderr, "holds character U+1F512, which ZooKeeper does not allow") {
			t.Errorf("herald %v: exit %d, want %d naming U+1F512; stderr: %s", args, code, exitUsage, stderr)
		}
	}
}

// The variables run and lock give their command name their own group and
// id, not defaults for a herald that command starts: a nested lock or run
// without its path is a usage error naming the parent's variable, rather
// than a wait behind its own parent for ever under the parent's id; one
// with its path takes its own id. checkpoint put and get in the command
// still find their election there.
func TestNestedHeraldDoesNotJoinItsParentsGroup(t *testing.T) {
	zkFl := zkFlags(t)
	l, g := uniq(t)+"-lock", uniq(t)+"-run"
	zkArgs := strings.Join(zkFl, " ")
	inner := `"$HERALD_BIN" ` + zkArgs + ` lock --timeout 3s -- echo inner-lock-ran; echo inner-lock=$?
		"$HERALD_BIN" ` + zkArgs + ` lock --lock ` + l + `-2 -- sh -c 'echo "inner-id=[$HERALD_ID]"'`
	out, stderr, code := heraldRun(t, nil, append(zkFl, "lock", "--lock", l, "--id", "outer", "--", "sh", "-c", inner)...)
	if code != 0 || !strings.Contains(out, "inner-lock=2") || strings.Contains(out, "inner-lock-ran") ||
		!strings.Contains(stderr, "--lock is required: this herald runs inside the command of herald lock, whose HERALD_LOCK="+l) {
		t.Errorf("lock without --lock inside herald lock: exit %d, want a usage error (2) naming HERALD_LOCK:\n%s%s", code, out, stderr)
	}
	if strings.Contains(out, "inner-id=[outer]") || !strings.Contains(out, "inner-id=[") {
		t.Errorf("lock inside herald lock took the parent's id:\n%s%s", out, stderr)
	}

	inner = `timeout 10 "$HERALD_BIN" ` + zkArgs + ` run -- echo inner-run-ran; echo inner-run=$?
		"$HERALD_BIN" checkpoint put step=1 && "$HERALD_BIN" checkpoint get && echo put-ok`
	out, stderr, code = heraldRun(t, nil, append(zkFl, "run", "--election", g, "--id", "outer", "--", "sh", "-c", inner)...)
	if code != 0 || !strings.Contains(out, "inner-run=2") || strings.Contains(out, "inner-run-ran") ||
		!strings.Contains(stderr, "--election is required: this herald runs inside the command of herald run, whose HERALD_ELECTION="+g) {
		t.Errorf("run without --election inside herald run: exit %d, want a usage error (2) naming HERALD_ELECTION:\n%s%s", code, out, stderr)
	}
	if !strings.Contains(out, "step=1\nput-ok") {
		t.Errorf("checkpoint put and get inside herald run did not find the election:\n%s%s", out, stderr)
	}
}

// TestFlagGivenTwice: a flag that takes one value, given twice, is a usage
// error rather than the last one winning in silence (lock would hold
// /dupB for a script that believes it holds /dupA); flags that take a
// list repeat as before, and anything after "--" is the command's.
func TestFlagGivenTwice(t *testing.T) {
	for _, args := range [][]string{
		{"lock", "--lock", "/dupA", "--lock", "/dupB", "--", "true"},
		{"run", "--election", "/e1", "--election=/e2", "--", "true"},
		{"--zk", "127.0.0.1:1", "--zk", "127.0.0.1:2", "who", "/x"},
	} {
		_, stderr, code := heraldRun(t, nil, args...)
		if code != exitUsage || !strings.Contains(stderr, "given 2 times: give it once") {
			t.Errorf("herald %v: exit %d, want %d saying the flag was given twice; stderr: %s", args, code, exitUsage, stderr)
		}
	}
	// The command's own flags, after "--", are its business.
	if _, stderr, code := heraldRun(t, nil, append(zkFlags(t), "lock", "--lock", uniq(t), "--", "sh", "-c", "exit 0", "--lock", "--lock")...); code != 0 {
		t.Errorf("a command whose arguments repeat a herald flag: exit %d; stderr: %s", code, stderr)
	}
}

// TestUnprintableIDIsRefused: an --id with a newline (a shell variable
// read with its trailing newline, say) was taken, and split every log
// line, event and who table that showed it. It is refused before
// connecting, naming --id; so are bytes that are not UTF-8.
func TestUnprintableIDIsRefused(t *testing.T) {
	for _, id := range []string{"worker-1\n", "a\tb", "\xff\xfe", "a\u2028b", "a\u202eb"} {
		for _, args := range [][]string{{"run", "--election", "/x"}, {"lock", "--lock", "/x"}} {
			_, stderr, code := heraldRun(t, nil, append(append([]string{"--zk", "127.0.0.1:1", "--connect-timeout", "1s"}, args...), "--id", id, "--", "true")...)
			if code != exitUsage || !strings.Contains(stderr, "--id ") || !strings.Contains(stderr, "does not print") {
				t.Errorf("herald %s --id %q: exit %d, want %d naming --id: %s", args[0], id, code, exitUsage, stderr)
			}
		}
	}
}

// TestLongIDNamesTheFlag: an --id longer than the library takes is
// refused before connecting, naming --id. Before, the campaign's error was
// reported as "--election: ..." (or "--lock: ...").
func TestLongIDNamesTheFlag(t *testing.T) {
	id := strings.Repeat("x", 2000)
	for _, args := range [][]string{{"run", "--election", "/x"}, {"lock", "--lock", "/x"}} {
		_, stderr, code := heraldRun(t, nil, append(append([]string{"--zk", "127.0.0.1:1", "--connect-timeout", "1s"}, args...), "--id", id, "--", "true")...)
		if code != exitUsage || !strings.Contains(stderr, "--id is 2000 bytes long") {
			t.Errorf("herald %s with a 2000-byte --id: exit %d, want %d naming --id: %s", args[0], code, exitUsage, stderr)
		}
	}
}

// TestWhoLeaderUnderAMissingParent: a leader path whose parent does not
// exist (a Kafka chroot left out or mistyped) was answered "no owner: no
// leader node", exit 5, which a script takes for a cluster without a
// controller (found by a review). It is an error naming the missing
// parent, exit 1; under a parent that exists, no leader node is still
// exit 5.
func TestWhoLeaderUnderAMissingParent(t *testing.T) {
	flags := zkFlags(t)
	root := uniq(t)
	mkpath(t, rawZK(t), root)
	out, stderr, code := heraldRun(t, nil, append(flags, "who", root+"/controller")...)
	if code != exitNoOwner || !strings.Contains(out, "no leader node") {
		t.Errorf("who under a parent that exists: exit %d (want %d):\n%s%s", code, exitNoOwner, out, stderr)
	}
	for _, p := range []string{root + "/kafka/controller", root + "/hadoop-ha/ns1/ActiveStandbyElectorLock", root + "/hbase/master"} {
		out, stderr, code = heraldRun(t, nil, append(flags, "who", p)...)
		if code != 1 || !strings.Contains(stderr, path.Dir(p)+" does not exist") || strings.Contains(out, "no owner") {
			t.Errorf("who %s, its parent missing: exit %d (want 1 naming %s):\n%s%s", p, code, path.Dir(p), out, stderr)
		}
	}
}

// TestWhoFormatReadsANodeNamedLikeAnotherSystems: a leader node whose
// name suggests another system's (an application's own .../master, not
// HBase's) was read as that system's, its id the raw data with a note
// that it does not decode; --format reads it as written. Bad uses of the
// flag are usage errors saying what to give.
func TestWhoFormatReadsANodeNamedLikeAnotherSystems(t *testing.T) {
	flags := zkFlags(t)
	master := uniq(t) + "/app/master"
	c := rawZK(t)
	mkpath(t, c, path.Dir(master))
	s := zkSession(t)
	if _, err := s.Conn().Create(master, []byte("worker-7"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := heraldRun(t, nil, append(flags, "who", master)...)
	if code != 0 || !strings.Contains(out, "worker-7") || !strings.Contains(out, "its data is not as its system writes it") {
		t.Fatalf("who %s (read as HBase's by its name): exit %d, want 0 naming worker-7 with a note that its data is not HBase's:\n%s%s", master, code, out, stderr)
	}
	out, stderr, code = heraldRun(t, nil, append(flags, "who", master, "--format", "generic")...)
	if code != 0 || !strings.Contains(out, "worker-7") || strings.Contains(out, "note:") {
		t.Fatalf("who %s --format generic: exit %d, want 0 naming worker-7 without a note:\n%s%s", master, code, out, stderr)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"who", master, "--format", "hbse"}, "want one of auto, generic, kafka, hbase"},
		{[]string{"who", master, "--format", "generic", "--recipe", "lock"}, "not both"},
		{[]string{"who", master, "--format", "generic", "--nats", "nats://127.0.0.1:1"}, "--leader PATH=FORMAT"},
		{[]string{"who", "--preset", "kafka", "--format", "generic"}, "give --format with a PATH"},
	} {
		_, stderr, code := heraldRun(t, nil, append(flags, bad.args...)...)
		if code != exitUsage || !strings.Contains(stderr, bad.want) {
			t.Errorf("%v: exit %d, want %d saying %q:\n%s", bad.args, code, exitUsage, bad.want, stderr)
		}
	}
}

// TestWhoSaysWhyASystemsNodeIsNoLeader: Hadoop's ActiveBreadCrumb (a
// persistent record of the last active NameNode) and a persistent copy of
// /hbase/master were answered "no owner, 0 waiting" alone, the reason
// herald had worked out thrown away (found by a review). who now adds it
// as a note, pointing to the lock for the breadcrumb; an empty group of no
// system's path gets none.
func TestWhoSaysWhyASystemsNodeIsNoLeader(t *testing.T) {
	flags := zkFlags(t)
	root := uniq(t)
	c := rawZK(t)
	crumb, master, group := root+"/hadoop-ha/ns1/ActiveBreadCrumb", root+"/hbase/master", root+"/locks/a"
	for _, p := range []string{crumb, master, group} {
		mkpath(t, c, path.Dir(p))
	}
	for _, p := range []string{crumb, master} {
		if _, err := c.Create(p, []byte("nn2\x01\x02"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	mkpath(t, c, group)
	for p, want := range map[string]string{crumb: "the leader is " + path.Dir(crumb) + "/ActiveStandbyElectorLock", master: "made by hand, not by a leader"} {
		out, stderr, code := heraldRun(t, nil, append(flags, "who", p)...)
		if code != exitNoOwner || !strings.Contains(out, "no owner") || !strings.Contains(out, "note: "+p+" is not a leader node") || !strings.Contains(out, want) {
			t.Errorf("who %s: exit %d (want %d, no owner, with a note saying %q):\n%s%s", p, code, exitNoOwner, want, out, stderr)
		}
		out, _, _ = heraldRun(t, nil, append(flags, "who", p, "--json")...)
		if !strings.Contains(out, `"notes":[`) || !strings.Contains(out, want) {
			t.Errorf("who %s --json: no note saying %q: %s", p, want, out)
		}
	}
	if out, _, code := heraldRun(t, nil, append(flags, "who", group)...); code != exitNoOwner || strings.Contains(out, "note:") {
		t.Errorf("who on an empty group: exit %d, want %d without a note:\n%s", code, exitNoOwner, out)
	}
}

// TestBadFlagValuesSayWhatToGive: a value a flag cannot take, given on the
// command line or in the environment, is named with what to give instead,
// not with Go's parse error (strconv.ParseInt: parsing "x": invalid
// syntax; time: missing unit in duration "5"), and exits 2.
func TestBadFlagValuesSayWhatToGive(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"who", "/x", "--connect-timeout", "5"}, `--connect-timeout "5": not a duration; give a duration such as 500ms, 5s or 1m30s`},
		{nil, []string{"lock", "--lock", "/x", "--timeout", "1.5", "--", "true"}, `--timeout "1.5": not a duration`},
		{nil, []string{"bench", "--clients", "x"}, `--clients "x": not a whole number; give a whole number`},
		{nil, []string{"bench", "--clients", "99999999999999999999"}, `--clients "99999999999999999999": out of range`},
		{nil, []string{"run", "--election", "/x", "--rejoin=maybe", "--", "true"}, `--rejoin "maybe": neither true nor false; give true or false`},
		{[]string{"HERALD_SESSION_TIMEOUT=10"}, []string{"who", "/x"}, `HERALD_SESSION_TIMEOUT="10": not a duration; give a duration such as 500ms`},
	} {
		_, stderr, code := heraldRun(t, tc.env, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "strconv.") || strings.Contains(stderr, "time: ") {
			t.Errorf("herald %v (env %v): exit %d, want 2 saying %q without Go's parse error; stderr: %s", tc.args, tc.env, code, tc.want, stderr)
		}
	}
}
