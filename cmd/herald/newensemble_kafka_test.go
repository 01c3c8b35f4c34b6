package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// TestKafkaReadersTakeANewEnsemblesSnapshot: the topics hold owner-A at
// term and zxid 600, then a new ensemble's snapshot of owner-C
// (new_ensemble, term and zxid 5), then owner-C handing over to owner-B
// (term 9), still far below 600, while the bridge's heartbeat confirms the
// group. who --kafka must name owner-B, fresh, not owner-A; history
// --kafka must end owner-A's tenure, mark the gap, and show owner-B
// holding, as from NATS and the audit log (TestBridgeEnsembleReplaced).
func TestKafkaReadersTakeANewEnsemblesSnapshot(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	kc := kafkatest.Start(t)
	ks, err := kafkasink.New(kafkasink.Config{Brokers: kc.Addrs(), Partitions: 1, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ks.Close() })
	g := uniq(t)
	write(t, ks, newEnsembleStory(g, time.Now().UTC().Add(-3*time.Minute))...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	now := time.Now()
	if err := ks.WriteHeartbeat(ctx, publish.Heartbeat{Source: "test", State: publish.BridgeActive, Time: now, Confirmed: now, Interval: time.Minute}); err != nil {
		t.Fatal(err)
	}
	src := []string{"--kafka", strings.Join(kc.Addrs(), ",")}
	out, stderr, code := heraldRun(t, nil, append([]string{"who", g, "--json"}, src...)...)
	var r whoReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || r.Owner == nil || r.Owner.ID != "owner-B" || r.Stale {
		t.Errorf("who --kafka after a new ensemble's snapshot: exit %d, want owner-B, fresh:\n%s%s", code, out, stderr)
	}
	ts := historyJSON(t, append([]string{g}, src...)...)
	checkNewEnsembleHistory(t, ts, src)
	if last := ts[len(ts)-1]; last.Unconfirmed {
		t.Errorf("history --kafka: owner-B's tenure is unconfirmed, though the owners topic names it and its bridge confirms it: %+v", last)
	}
}

// newEnsembleStory is owner-A's tenure of group at term 600, then a new
// ensemble's snapshot of owner-C (term 5) and owner-C handing over to
// owner-B (term 9), a minute apart from t0.
func newEnsembleStory(group string, t0 time.Time) []publish.Event {
	p := func(id string) *publish.Participant { return &publish.Participant{ID: id, Node: "n_" + id} }
	mk := func(typ publish.Type, owner, prev *publish.Participant, term int64, min int) publish.Event {
		return publish.Event{Type: typ, Group: group, Recipe: elect.RecipeElection, Owner: owner, Previous: prev,
			Term: term, Zxid: term, Time: t0.Add(time.Duration(min) * time.Minute), Source: "test"}.WithID()
	}
	snap := []publish.Event{mk(publish.LeaderElected, p("owner-C"), nil, 5, 1)}
	snap[0].Snapshot = true
	publish.MarkNewEnsemble(snap)
	lost := mk(publish.LeaderLost, p("owner-B"), p("owner-C"), 5, 2)
	lost.Zxid, lost.Reason = 9, elect.ReasonResigned // the change's zxid, the tenure's term
	return []publish.Event{mk(publish.LeaderElected, p("owner-A"), nil, 600, 0), snap[0],
		lost.WithID(), mk(publish.LeaderElected, p("owner-B"), p("owner-C"), 9, 2)}
}
