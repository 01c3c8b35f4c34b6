package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// clusterSink is herald's JetStream sink on every node of c, its stream
// and buckets with 3 replicas, as a bridge on a cluster writes.
func clusterSink(t *testing.T, c *natsserver.Cluster) *jetstream.Sink {
	t.Helper()
	s, err := jetstream.New(jetstream.Config{Conn: natssink.Options{URL: c.URL()}, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// tenures is n tenures of group, each owner resigning to the next, the
// last still holding: 2n-1 events, all within the last hour.
func tenures(group string, n int) []publish.Event {
	start := time.Now().UTC().Add(-30 * time.Minute)
	p := func(i int) *publish.Participant {
		return &publish.Participant{ID: fmt.Sprintf("owner-%d", i), Node: fmt.Sprintf("n_%010d", i), Session: fmt.Sprintf("0x%x", i+1), Sequence: int32(i)}
	}
	var out []publish.Event
	for i := range n {
		at := start.Add(time.Duration(i) * time.Second)
		term, zxid := int64(100+10*i), int64(100+10*i)
		var prev *publish.Participant
		if i > 0 {
			prev = p(i - 1)
			out = append(out, publish.Event{Type: publish.LeaderLost, Group: group, Recipe: elect.RecipeElection, Owner: p(i), Previous: prev,
				Term: term - 10, Zxid: zxid, Reason: elect.ReasonResigned, Time: at, Source: "test"}.WithID())
		}
		out = append(out, publish.Event{Type: publish.LeaderElected, Group: group, Recipe: elect.RecipeElection, Owner: p(i), Previous: prev,
			Term: term, Zxid: zxid, Time: at, Source: "test"}.WithID())
	}
	return out
}

// TestHistoryFromANATSCluster: history --nats reads a stream of a few
// hundred events on a 3-node JetStream cluster whole, through every node
// and through all of them, time after time; and who --nats there says the
// group's health (changes_last_hour), which is read the same way. Read one
// consumer per message, a cluster answered "no responders" after a few
// dozen: the new consumer was not yet known to the server the client asked.
func TestHistoryFromANATSCluster(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	c := natsserver.StartCluster(t, 3)
	const n = 150
	g := uniq(t)
	other := g + "-other"
	s := clusterSink(t, c)
	evs := tenures(g, n)
	write(t, s, append(evs, tenures(other, 20)...)...)

	urls := append([]string{c.URL()}, c.URLs()...)
	for run := range 6 {
		url := urls[run%len(urls)]
		out, stderr, code := heraldRun(t, nil, "history", g, "--nats", url, "--json")
		var ts []struct {
			Group string `json:"group"`
			Term  int64  `json:"term"`
			Owner struct {
				ID string `json:"id"`
			} `json:"owner"`
		}
		if err := json.Unmarshal([]byte(out), &ts); code != 0 || err != nil {
			t.Fatalf("history --nats %s (run %d): exit %d, %v:\n%s%s", url, run, code, err, out, stderr)
		}
		if len(ts) != n {
			t.Fatalf("history --nats %s (run %d): %d tenures, want %d", url, run, len(ts), n)
		}
		for i, x := range ts {
			if x.Group != g || x.Owner.ID != fmt.Sprintf("owner-%d", i) || x.Term != int64(100+10*i) {
				t.Fatalf("history --nats %s (run %d): tenure %d is %+v, want owner-%d of %s", url, run, i, x, i, g)
			}
		}
	}

	out, stderr, code := heraldRun(t, nil, "who", g, "--nats", c.URL(), "--json")
	if code != 0 || !strings.Contains(out, fmt.Sprintf(`"changes_last_hour":%d`, n)) || stderr != "" {
		t.Errorf("who --nats on the cluster: exit %d, want the owner and %d changes in the last hour:\n%s%s", code, n, out, stderr)
	}
}

// TestReadersSayJetStreamIsDown: with two of a 3-node cluster's servers
// stopped, JetStream has no quorum: the one left answers, but cannot serve
// the stream or the buckets. who, tail and history --nats exit 69, saying
// JetStream is unavailable, not that a bridge may not be publishing.
func TestReadersSayJetStreamIsDown(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	c := natsserver.StartCluster(t, 3)
	g := uniq(t)
	s := clusterSink(t, c)
	write(t, s, tenures(g, 3)...)
	if _, stderr, code := heraldRun(t, nil, "who", g, "--nats", c.URL()); code != 0 {
		t.Fatalf("who --nats before the outage: exit %d: %s", code, stderr)
	}
	_ = s.Close()
	c.Stop(1)
	c.Stop(2)
	for _, args := range [][]string{
		{"who", g, "--nats", c.URL()},
		{"history", g, "--nats", c.URL()},
		{"tail", g, "--nats", c.URL(), "--since", "1h"},
	} {
		begin := time.Now()
		out, stderr, code := heraldRun(t, nil, args...)
		t.Logf("herald %v: exit %d after %v: %s%s", args, code, time.Since(begin).Round(time.Millisecond), out, stderr)
		if code != exitUnreachable || !strings.Contains(stderr, "JetStream on the NATS cluster is unavailable now") || strings.Contains(stderr, "is a bridge publishing") {
			t.Errorf("herald %v with 2 of 3 servers down: exit %d (want %d), want JetStream said unavailable:\n%s%s", args, code, exitUnreachable, out, stderr)
		}
	}
}
