package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/jetstream"
)

// TestHistorySaysUnconfirmedOnceItsBridgeStopped: from NATS, from Kafka
// and from the bridge's audit log (with the heartbeat kept beside it), an
// owner the events leave holding is "holding" while its bridge confirms
// it; once that bridge has stopped (and nothing else confirms it),
// history says "open, last confirmed <time>" and --json "unconfirmed", as
// who says stale.
func TestHistorySaysUnconfirmedOnceItsBridgeStopped(t *testing.T) {
	g, url, b, sources := confirmedOnThreeSources(t, "--drain-timeout", "5s")
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := b.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("bridge exit %d after SIGTERM:\n%s", code, b.out)
	}
	for _, src := range sources {
		out, stderr, code := heraldRun(t, nil, append([]string{"history", g}, src...)...)
		if code != 0 || strings.Contains(out, "holding") || !strings.Contains(out, "open, last confirmed ") {
			t.Errorf("history %v after its bridge stopped: exit %d, want \"open, last confirmed\", not holding:\n%s%s", src, code, out, stderr)
		}
		ts := historyJSON(t, append([]string{g}, src...)...)
		if len(ts) != 1 || !ts[0].Open() || !ts[0].Unconfirmed || ts[0].Confirmed.IsZero() {
			t.Errorf("history %v --json after its bridge stopped: %+v: want open, unconfirmed, with its last confirmation", src, ts)
		}
	}
	// The owners bucket deleted: nothing confirms the open tenure, which
	// used to read "holding" then.
	if err := natsserver.JetStream(t, url).DeleteKeyValue(context.Background(), jetstream.DefaultBucket); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := heraldRun(t, nil, "history", g, "--nats", url)
	if code != 0 || strings.Contains(out, "holding") || !strings.Contains(out, "open, not confirmed") {
		t.Errorf("history --nats with the owners bucket deleted: exit %d, want \"open, not confirmed\", not holding:\n%s%s", code, out, stderr)
	}
}

// confirmedOnThreeSources starts a bridge (with args added) publishing a
// group worker-1 holds to NATS, Kafka and an audit log, heartbeats every
// 200ms, and waits until history shows worker-1 holding from each. It
// returns the group, the NATS URL, the bridge and the three sources'
// flags.
func confirmedOnThreeSources(t *testing.T, args ...string) (g, url string, b *proc, sources [][]string) {
	t.Helper()
	zk := zkFlags(t)
	g = uniq(t)
	url = natsserver.Start(t).URL()
	kafka := strings.Join(kafkatest.Start(t).Addrs(), ",")
	campaign(t, zkSession(t), g, "worker-1")
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	b = start(t, nil, append(append([]string{"bridge", "--watch", g, "--nats", url, "--kafka", kafka, "--audit", auditLog, "--heartbeat", "200ms", "--source", "hb-1"}, args...), zk...)...)
	sources = [][]string{{"--nats", url}, {"--kafka", kafka}, {"--audit", auditLog}}
	for _, src := range sources {
		var out string
		if err := waitFor(30*time.Second, func() bool {
			out, _, _ = heraldRun(t, nil, append([]string{"history", g}, src...)...)
			return strings.Contains(out, "worker-1") && strings.Contains(out, "holding")
		}); err != nil {
			t.Fatalf("history %v never showed worker-1 holding while its bridge confirms it:\n%s\nbridge:\n%s", src, out, b.out)
		}
	}
	return g, url, b, sources
}

// TestHistoryFromAnHABridgesAuditLog: an HA bridge deposed (cut from
// ZooKeeper past its session timeout) comes back as a standby. Its own
// audit log, read alone, must not say that the owner it last logged still
// holds: that owner left while it stood by. With the heartbeat kept beside
// the log, history says "open, last confirmed <when it stopped
// publishing>"; merged with the active bridge's log it tells the truth,
// the next owner holding; and once that bridge is killed -9, its log read
// alone stops saying holding within the heartbeat bound.
func TestHistoryFromAnHABridgesAuditLog(t *testing.T) {
	zk := zktest.Shared(t)
	g, ha := uniq(t), uniq(t)+"-ha"
	proxy, err := faultproxy.New(zk.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	url := natsserver.Start(t).URL()
	dir := t.TempDir()
	logA, logB := filepath.Join(dir, "a", "audit.log"), filepath.Join(dir, "b", "audit.log")
	httpAddr := regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`)
	// Sources are claimed across the shared ZooKeeper: parallel tests name theirs apart.
	sfx := "-" + newRunID()[:8]
	bridge := func(name, zkAddr, log string) (*proc, string) {
		p := start(t, nil, "bridge", "--zk", zkAddr, "--session-timeout", "1s", "--connect-timeout", "10s",
			"--watch", g, "--ha", ha, "--source", name+sfx, "--nats", url, "--audit", log, "--heartbeat", "200ms", "--http", "127.0.0.1:0")
		return p, waitMatch(t, p, httpAddr, 30*time.Second)
	}
	s := zkSession(t)
	w1 := campaign(t, s, g, "worker-1")
	a, addrA := bridge("bridge-a", proxy.Addr(), logA)
	waitRole(t, addrA, "active")
	b, addrB := bridge("bridge-b", zk.ConnectString(), logB)
	waitRole(t, addrB, "standby")
	untilRow := func(logs []string, owner, want string) string {
		t.Helper()
		args := []string{"history", g}
		for _, l := range logs {
			args = append(args, "--audit", l)
		}
		var out, stderr string
		if err := waitFor(20*time.Second, func() bool {
			out, stderr, _ = heraldRun(t, nil, args...)
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, owner) && strings.Contains(line, want) {
					return true
				}
			}
			return false
		}); err != nil {
			t.Fatalf("history %v never showed %s %q:\n%s%s", logs, owner, want, out, stderr)
		}
		return out
	}
	untilRow([]string{logA}, "worker-1", "holding")

	proxy.Blackhole(true) // bridge-a cut past its 1 s session timeout: deposed
	waitRole(t, addrB, "active")
	time.Sleep(1500 * time.Millisecond)
	proxy.Blackhole(false)
	waitRole(t, addrA, "standby")
	if err := w1.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	campaign(t, s, g, "worker-2")

	untilRow([]string{logA, logB}, "worker-2", "holding")
	out := untilRow([]string{logA}, "worker-1", "open, last confirmed ")
	if strings.Contains(out, "holding") {
		t.Errorf("the deposed bridge's log read alone still says holding:\n%s", out)
	}
	ts := historyJSON(t, g, "--audit", logA)
	if len(ts) != 1 || !ts[0].Open() || !ts[0].Unconfirmed || ts[0].Confirmed.IsZero() {
		t.Errorf("history --json of the deposed bridge's log: %+v: want worker-1 open, unconfirmed, with its last confirmation", ts)
	}
	h, found, err := audit.ReadHeartbeat(logA)
	if err != nil || !found || h.State != publish.BridgeStandby || h.Source != "bridge-a"+sfx {
		t.Errorf("heartbeat beside the deposed bridge's log: %+v found=%v err=%v: want bridge-a standing by", h, found, err)
	}

	// bridge-a stops (cleanly), then bridge-b is killed: its log read
	// alone holds worker-2 open until its heartbeat is older than the
	// bound (3 intervals, at least 1 s), then not.
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	a.wait(t, 20*time.Second)
	untilRow([]string{logB}, "worker-2", "holding")
	_ = signalPID(b.cmd.Process.Pid, syscall.SIGKILL)
	b.wait(t, 5*time.Second)
	out = untilRow([]string{logB}, "worker-2", "open, last confirmed ")
	if strings.Contains(out, "holding") {
		t.Errorf("the killed bridge's log still says holding:\n%s", out)
	}
	// A heartbeat file that is no heartbeat leaves nothing confirmed by
	// it, and says which file.
	if err := os.WriteFile(audit.HeartbeatPath(logB), []byte("{}\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := heraldRun(t, nil, "history", g, "--audit", logB)
	if code != 0 || strings.Contains(out, "holding") || !strings.Contains(stderr, audit.HeartbeatPath(logB)) {
		t.Errorf("history with a broken heartbeat file: exit %d, want 0, no holding, a warning naming the file:\n%s%s", code, out, stderr)
	}
}
