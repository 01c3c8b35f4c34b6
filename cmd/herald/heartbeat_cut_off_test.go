package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestHeartbeatOnACutOffMemberConfirmsNoGoneOwner (found by an
// adversarial test): a bridge's heartbeat proves its view with one round
// trip on its session (zkAnswers). That was a read, which a follower cut
// off from the rest of the ensemble answers from its own, stale, state
// until a sync of the session's lease queues behind the leader (up to an
// eighth of the session timeout after the cut). An owner that let go just
// after the cut was then confirmed by active heartbeats dated after its
// node was gone from the ensemble (1.8 s of them here). The proof is now a
// sync, which the follower answers only once the leader has.
func TestHeartbeatOnACutOffMemberConfirmsNoGoneOwner(t *testing.T) {
	zkc, cut, other := cuttableEnsemble(t)
	g := uniq(t)
	log := filepath.Join(t.TempDir(), "audit.log")
	owner := start(t, nil, "--zk", zkc.Member(other).Addr(), "--session-timeout", "4s", "lock", "--lock", g, "--id", "x", "--", "sh", "-c", "echo holding; exec sleep 60")
	owner.waitOutput(t, "holding", 20*time.Second)
	br := start(t, nil, "--zk", zkc.Member(cut).Addr(), "--session-timeout", "16s", "bridge", "--watch", g, "--audit", log, "--heartbeat", "10ms", "--source", "b1",
		"--nats-listen", "127.0.0.1:0", "--nats-store", t.TempDir())
	hb := func() (state string, at time.Time) {
		raw, err := os.ReadFile(log + ".heartbeat")
		if err != nil {
			return "", time.Time{}
		}
		var h struct {
			State string    `json:"state"`
			Time  time.Time `json:"time"`
		}
		_ = json.Unmarshal(raw, &h)
		return h.State, h.Time
	}
	if err := waitFor(30*time.Second, func() bool {
		st, _ := hb()
		b, _ := os.ReadFile(log)
		return st == "active" && strings.Contains(string(b), `"x"`)
	}); err != nil {
		t.Fatalf("no active heartbeat with x's gain: %v\n%s", err, br.out)
	}
	time.Sleep(2100 * time.Millisecond) // past a lease sync, so the cut comes early in a sync period
	if err := zkc.Isolate(cut, true); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = zkc.Isolate(cut, false) }()
	tCut := time.Now()
	_ = signalPID(owner.cmd.Process.Pid, syscall.SIGTERM)
	raw := zkConnTo(t, zkc.Member(other).Addr())
	var gone time.Time
	if err := waitFor(5*time.Second, func() bool {
		ch, _, err := raw.Children(g)
		ch = slices.DeleteFunc(ch, func(c string) bool { _, ok := elect.ParseName(c); return !ok })
		if err == nil && len(ch) == 0 {
			gone = time.Now()
			return true
		}
		return false
	}); err != nil {
		t.Fatal("x never let go")
	}
	t.Logf("x's node gone from the ensemble %v after the cut", gone.Sub(tCut).Round(time.Millisecond))
	var last time.Time
	deadline := time.Now().Add(3 * time.Second)
	asked := false
	for time.Now().Before(deadline) {
		if st, at := hb(); st == "active" && at.After(last) {
			last = at
		}
		if !asked && time.Since(gone) > 1200*time.Millisecond {
			asked = true
			out, stderr, code := heraldRun(t, nil, "history", g, "--audit", log)
			t.Logf("%v after x's node was gone, herald history says (exit %d):\n%s%s", time.Since(gone).Round(time.Millisecond), code, out, stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	b, _ := os.ReadFile(log)
	t.Logf("last active heartbeat %v after x's node was gone; x's loss in the log: %v", last.Sub(gone).Round(time.Millisecond), strings.Contains(string(b), "lock.released"))
	if last.After(gone) && !strings.Contains(string(b), "lock.released") {
		t.Errorf("the bridge on the cut-off member confirmed x %v after x's node was gone from the ensemble:\n%s\n%s", last.Sub(gone).Round(time.Millisecond), b, br.out)
	}
}

// zkConnTo connects to one ZooKeeper address.
func zkConnTo(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// cuttableEnsemble starts a 3-member ensemble whose members the test can
// cut off from each other (Cluster.Isolate), with a 250 ms tick (so a
// follower gives its leader up after 2.5 s), and returns it with its two
// followers.
func cuttableEnsemble(t *testing.T) (zkc *zkserver.Cluster, cut, other int) {
	t.Helper()
	zkc = zktest.ForTest(t, zkserver.Config{Nodes: 3, Isolatable: true, TickTime: 250 * time.Millisecond})
	followers, err := zkc.Followers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return zkc, followers[0], followers[1]
}
