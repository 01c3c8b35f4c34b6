package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
	"github.com/zkherald/herald/sinks/audit"
)

// TestBridgeEnsembleReplaced: the ZooKeeper ensemble a bridge reads is
// replaced by one that starts empty, its zxids (and owners' terms) again
// below the ones the bridge's stores hold, while the stores (JetStream, an
// audit log) are kept: the bridge pointed at another ensemble after a
// restart, or the ensemble rebuilt empty under the same address while the
// bridge runs. who --nats must then name the new ensemble's owner,
// confirmed, not the gone one's, and history show the gone owner's tenure
// ended, a gap, and the new owner's tenure holding. Before, both ordered
// the new ensemble's events by their lower zxids and terms as older, and
// kept presenting the gone owner as current.
func TestBridgeEnsembleReplaced(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	for _, inPlace := range []bool{false, true} {
		name := map[bool]string{false: "another ensemble", true: "rebuilt in place"}[inPlace]
		t.Run(name, func(t *testing.T) {
			g, url := uniq(t), natsserver.Start(t).URL()
			log := filepath.Join(t.TempDir(), "audit.log")
			a := zktest.ForTest(t, zkserver.Config{})
			bumpZxids(t, a.Addrs(), 300) // the old ensemble's zxids are well above the new one's
			bridge := func(zkc *zkserver.Cluster) *proc {
				return start(t, nil, "bridge", "--zk", zkc.ConnectString(), "--session-timeout", "1s", "--connect-timeout", "10s",
					"--watch", g, "--nats", url, "--audit", log, "--heartbeat", "200ms", "--source", "br", "--drain-timeout", "5s")
			}
			br := bridge(a)
			sa := ensembleSession(t, a)
			campaign(t, sa, g, "owner-A")
			waitWhoNATS(t, g, url, "owner-A", br)
			b := a
			if inPlace {
				rebuild(t, a)
			} else {
				stopBridge(t, br)
				_ = sa.Close()
				b = zktest.ForTest(t, zkserver.Config{})
			}
			campaign(t, ensembleSession(t, b), g, "owner-B")
			if !inPlace {
				br = bridge(b)
			}
			waitWhoNATS(t, g, url, "owner-B", br)
			for _, src := range [][]string{{"--nats", url}, {"--audit", log}} {
				checkNewEnsembleHistory(t, historyJSON(t, append([]string{g}, src...)...), src)
			}
		})
	}
}

// checkNewEnsembleHistory checks a history of owner-A then owner-B across
// a replaced ensemble: A's tenure ended, a gap before B, B holding last.
func checkNewEnsembleHistory(t *testing.T, ts []audit.Tenure, src []string) {
	t.Helper()
	if len(ts) < 2 {
		t.Fatalf("history %v: %+v, want owner-A's tenure, then owner-B's", src, ts)
	}
	first, last := ts[0], ts[len(ts)-1]
	gap := false
	for _, r := range ts[1:] {
		gap = gap || r.Gap
	}
	if first.Owner.ID != "owner-A" || first.Until.IsZero() || last.Owner.ID != "owner-B" || !last.Until.IsZero() || !gap {
		t.Errorf("history %v: %+v\nwant owner-A ended, a gap, owner-B holding last", src, ts)
	}
}

// waitWhoNATS waits until who --nats names owner, confirmed by a bridge.
func waitWhoNATS(t *testing.T, g, url, owner string, br *proc) {
	t.Helper()
	var r whoReport
	var out string
	if err := waitFor(40*time.Second, func() bool {
		var code int
		out, _, code = heraldRun(t, nil, "who", g, "--json", "--nats", url)
		r = whoReport{}
		return code == 0 && json.Unmarshal([]byte(out), &r) == nil && r.Owner != nil && r.Owner.ID == owner && !r.Stale
	}); err != nil {
		t.Fatalf("who --nats never named %s, confirmed (%v); last:\n%s\nbridge:\n%s", owner, err, out, br.out)
	}
}

// ensembleSession is a session on zkc, closed when the test ends.
func ensembleSession(t *testing.T, zkc *zkserver.Cluster) *elect.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := elect.NewSession(ctx, zkc.Addrs(), elect.WithSessionTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// bumpZxids makes n transactions on the ensemble at addrs.
func bumpZxids(t *testing.T, addrs []string, n int) {
	t.Helper()
	conn, _, err := zk.Connect(addrs, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := range n {
		p := fmt.Sprintf("/bump-%d", i)
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
		if err := conn.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
	}
}

// rebuild stops zkc's standalone server, wipes its data (its myid stays)
// and starts it again under the same address: an ensemble rebuilt empty.
func rebuild(t *testing.T, zkc *zkserver.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s := zkc.Member(0)
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(s.Dir(), "data", "version-2")); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
}

// stopBridge stops a bridge as an operator would, and waits for it.
func stopBridge(t *testing.T, br *proc) {
	t.Helper()
	_ = br.cmd.Process.Signal(syscall.SIGTERM)
	if code := br.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("bridge: exit %d after SIGTERM", code)
	}
}

// TestBridgeRestartAfterAnAcknowledgmentIsNoNewEnsemble: a `herald run`
// leader acknowledges (leader.ready), which the bridge reports at the
// office's zxid, above the group's. A bridge restarted on the same
// ensemble reads the group's snapshot at the group's own zxid, below
// that: it must not take the ensemble for a new one (a false gap, and a
// snapshot published over the stores' state).
func TestBridgeRestartAfterAnAcknowledgmentIsNoNewEnsemble(t *testing.T) {
	g, url := uniq(t), natsserver.Start(t).URL()
	log := filepath.Join(t.TempDir(), "audit.log")
	zkc := zktest.Shared(t)
	bridge := func() *proc {
		return start(t, nil, "bridge", "--zk", zkc.ConnectString(), "--session-timeout", "2s", "--connect-timeout", "10s",
			"--watch", g, "--nats", url, "--audit", log, "--heartbeat", "200ms", "--source", "br", "--drain-timeout", "5s")
	}
	br := bridge()
	leader := start(t, nil, "--zk", zkc.ConnectString(), "run", "--election", g, "--id", "leader", "--", "sleep", "60")
	if err := waitFor(30*time.Second, func() bool { b, _ := os.ReadFile(log); return strings.Contains(string(b), "leader.ready") }); err != nil {
		t.Fatalf("the bridge never reported the leader's acknowledgment: %v\nbridge:\n%s\nleader:\n%s", err, br.out, leader.out)
	}
	stopBridge(t, br)
	br = bridge()
	waitWhoNATS(t, g, url, "leader", br)
	time.Sleep(time.Second) // the restarted bridge's snapshot is published
	if strings.Contains(br.out.String(), "not the one reported from before") {
		t.Errorf("a bridge restarted on the same ensemble took it for a new one:\n%s", br.out)
	}
	for _, r := range historyJSON(t, g, "--audit", log) {
		if r.Gap {
			t.Errorf("history after a plain restart shows a gap: %+v", r)
		}
	}
}
