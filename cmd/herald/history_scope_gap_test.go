package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

// TestHistoryMarksAGroupOutOfItsBridgesScope: a bridge publishes A's
// tenure of a group, then is killed; it runs again under the same source,
// audit log, NATS and Kafka, watching another group only, while A resigns and B
// and C lead and resign in turn and D leads. Its heartbeats go on, but
// none covers the group: history, from the audit log, from NATS and from
// Kafka, must show B and C, or a stretch of missing owners after A (found
// by an adversarial test, F5; from Kafka, whose heartbeats history did not
// read, the last row was A's, open, with nothing after it). Once the bridge watches the group again, D's row
// says gap.
func TestHistoryMarksAGroupOutOfItsBridgesScope(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zkFlags(t)
	g := uniq(t)
	url := natsserver.Start(t).URL()
	kafka := strings.Join(kafkatest.Start(t).Addrs(), ",")
	log := filepath.Join(t.TempDir(), "audit.log")
	bridge := func(watch string) *proc {
		return start(t, nil, append([]string{"bridge", "--watch", watch, "--nats", url, "--kafka", kafka, "--audit", log,
			"--heartbeat", "200ms", "--source", "br1", "--drain-timeout", "5s"}, zk...)...)
	}
	srcs := [][]string{{"--audit", log}, {"--nats", url}, {"--kafka", kafka}}
	s := zkSession(t)
	a := campaign(t, s, g, "A")
	p := bridge(g)
	for _, src := range srcs {
		untilHistory(t, g, src, "A") // in every sink before the kill
	}
	_ = signalPID(p.cmd.Process.Pid, syscall.SIGKILL)
	p.wait(t, 20*time.Second)
	p = bridge(g + "-other")
	time.Sleep(time.Second) // heartbeats of br1, covering the other group only
	for _, h := range []string{"B", "C", "D"} {
		if err := a.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
		a = campaign(t, s, g, h)
		time.Sleep(500 * time.Millisecond)
	}
	for _, src := range srcs {
		requireGapAfter(t, g, src, "A", "")
	}
	page := filepath.Join(t.TempDir(), "scope.html")
	if _, stderr, code := heraldRun(t, nil, "history", g, "--audit", log, "--html", page); code != 0 {
		t.Fatalf("history --html: exit %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), `<g class="gap">`) {
		t.Errorf("history --html draws no gap after A (%v)", err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 20*time.Second)
	bridge(g)
	for _, src := range srcs {
		untilHistory(t, g, src, "D")
		requireGapAfter(t, g, src, "A", "D")
	}
}

// requireGapAfter fails unless the history of g from src shows, after
// owner before and up to owner upTo ("" for the end), B and C or a row
// marked gap.
func requireGapAfter(t *testing.T, g string, src []string, before, upTo string) {
	t.Helper()
	ts := historyJSON(t, append([]string{g}, src...)...)
	seen, gap := map[string]bool{}, false
	for _, r := range ts {
		gap = gap || (r.Gap || r.Missing) && seen[before] && (upTo == "" || !seen[upTo])
		seen[r.Owner.ID] = true
	}
	if !gap && !(seen["B"] && seen["C"]) {
		out, _, _ := heraldRun(t, nil, append([]string{"history", g}, src...)...)
		t.Errorf("history %v leaves B and C out with no gap after %s:\n%s", src, before, out)
	}
}

// untilHistory waits until the history of g from src shows owner.
func untilHistory(t *testing.T, g string, src []string, owner string) {
	t.Helper()
	var out string
	if err := waitFor(30*time.Second, func() bool {
		out, _, _ = heraldRun(t, nil, append([]string{"history", g}, src...)...)
		return strings.Contains(out, " "+owner+" (")
	}); err != nil {
		t.Fatalf("history %v never showed %s:\n%s", src, owner, out)
	}
}

// TestMarkOutOfScopeOnlyWhereNoWriterObserves: the stretch of missing
// owners is added after a group's last row only when every bridge that
// wrote of it sent a heartbeat whose scope leaves it out; a heartbeat
// without a scope (an older bridge) covers every group, and a writer
// with no heartbeat in hand leaves the group as it is.
func TestMarkOutOfScopeOnlyWhereNoWriterObserves(t *testing.T) {
	now := time.Now().UTC()
	ts := []audit.Tenure{{Group: "/g", Term: 5, Owner: publish.Participant{ID: "A"}, From: now.Add(-time.Minute), LastSeen: now.Add(-time.Minute)}}
	events := []publish.Event{{Group: "/g", Source: "br1"}, {Group: "/g", Source: "br2"}}
	beat := func(source string, scope *publish.Scope) publish.Heartbeat {
		return publish.Heartbeat{Source: source, State: publish.BridgeActive, Time: now, Confirmed: now, Interval: time.Second, Scope: scope}
	}
	other := &publish.Scope{Watch: []string{"/other"}}
	for _, c := range []struct {
		name  string
		beats []publish.Heartbeat
		mark  bool
	}{
		{"both out of scope", []publish.Heartbeat{beat("br1", other), beat("br2", other)}, true},
		{"one covers it", []publish.Heartbeat{beat("br1", other), beat("br2", &publish.Scope{Watch: []string{"/g"}})}, false},
		{"one without a scope", []publish.Heartbeat{beat("br1", other), beat("br2", nil)}, false},
		{"one without a heartbeat", []publish.Heartbeat{beat("br1", other)}, false},
	} {
		b := publish.NewBridges()
		for _, h := range c.beats {
			b.Put(h)
		}
		out := markOutOfScope(b, events, ts, nil)
		marked := len(out) == 2 && out[1].Missing && out[1].Gap && out[1].From.Equal(ts[0].LastSeen) && out[1].Until.Equal(now)
		if marked != c.mark || (!c.mark && len(out) != 1) {
			t.Errorf("%s: rows %+v, want a stretch of missing owners after A: %v", c.name, out, c.mark)
		}
	}
	// The owners view spares the mark only when a bridge confirms A's
	// node there now: another bridge took the group over.
	b := publish.NewBridges()
	b.Put(beat("br1", other))
	b.Put(beat("br2", other))
	ts[0].Owner.Node = "a-0000000001"
	fresh := publish.Freshness{ConfirmedBy: "br3", BridgeState: publish.BridgeActive, Confirmed: now}
	for _, c := range []struct {
		name string
		view ownerNow
		mark bool
	}{
		{"A confirmed by another bridge", ownerNow{node: "a-0000000001", Freshness: fresh}, false},
		{"A, stale", ownerNow{node: "a-0000000001", Freshness: publish.Freshness{ConfirmedBy: "br3", BridgeState: publish.BridgeStopped, Stale: true}}, true},
		{"A, not judged", ownerNow{node: "a-0000000001", Freshness: publish.Freshness{ConfirmedBy: "br3"}}, true},
		{"another owner", ownerNow{node: "b-0000000002", Freshness: fresh}, true},
		{"no owner", ownerNow{Freshness: fresh}, true},
	} {
		out := markOutOfScope(b, events, ts, map[string]ownerNow{"/g": c.view})
		if marked := len(out) == 2 && out[1].Missing; marked != c.mark {
			t.Errorf("owners view %s: rows %+v, want a stretch of missing owners after A: %v", c.name, out, c.mark)
		}
	}
}
