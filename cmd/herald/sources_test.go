package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/kafkasink"
	"github.com/zkherald/herald/sinks/natssink"
)

// streamSinks starts a Kafka broker (kfake) and a NATS server with
// JetStream, and returns their addresses, as --kafka and --nats take them,
// and herald's sinks writing to each.
func streamSinks(t *testing.T) (kafkaAddrs, natsURL string, sinks []publish.Sink) {
	t.Helper()
	kc := kafkatest.Start(t)
	ks, err := kafkasink.New(kafkasink.Config{Brokers: kc.Addrs(), Partitions: 1, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ks.Close() })
	srv := natsserver.Start(t)
	js, err := jetstream.New(jetstream.Config{Conn: natssink.Options{URL: srv.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { js.Close() })
	return strings.Join(kc.Addrs(), ","), srv.URL(), []publish.Sink{ks, js}
}

// story is a short election: a is elected and ready, resigns, b follows.
func story(group string) []publish.Event {
	now := time.Now().UTC().Add(-2 * time.Minute)
	a := &publish.Participant{ID: "alpha", Node: "n_0000000001", Session: "0x1"}
	b := &publish.Participant{ID: "bravo", Node: "n_0000000002", Session: "0x2"}
	mk := func(typ publish.Type, owner, prev *publish.Participant, term, zxid int64, sec int, reason elect.Reason) publish.Event {
		return publish.Event{Type: typ, Group: group, Recipe: elect.RecipeElection, Owner: owner, Previous: prev,
			Term: term, Zxid: zxid, Reason: reason, Time: now.Add(time.Duration(sec) * time.Second), Source: "test"}.WithID()
	}
	return []publish.Event{
		mk(publish.LeaderElected, a, nil, 10, 10, 0, ""),
		mk(publish.LeaderReady, a, nil, 10, 11, 1, ""),
		mk(publish.LeaderLost, b, a, 10, 20, 30, elect.ReasonResigned),
		mk(publish.LeaderElected, b, a, 20, 20, 30, ""),
	}
}

// finalLoss ends b's tenure.
func finalLoss(group string) publish.Event {
	b := &publish.Participant{ID: "bravo", Node: "n_0000000002", Session: "0x2"}
	return publish.Event{Type: publish.LeaderLost, Group: group, Recipe: elect.RecipeElection, Previous: b,
		Term: 20, Zxid: 30, Reason: elect.ReasonSessionExpired, Time: time.Now().UTC(), Source: "test"}.WithID()
}

// jetStreamSink starts a NATS server with JetStream and returns its URL
// and a sink writing herald's stream and owners bucket there.
func jetStreamSink(t *testing.T) (string, *jetstream.Sink) {
	t.Helper()
	srv := natsserver.Start(t)
	s, err := jetstream.New(jetstream.Config{Conn: natssink.Options{URL: srv.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return srv.URL(), s
}

// auditLog writes events to a new audit log and returns its path.
func auditLog(t *testing.T, events ...publish.Event) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	as, err := audit.New(path)
	if err != nil {
		t.Fatal(err)
	}
	write(t, as, events...)
	if err := as.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func write(t *testing.T, s publish.Sink, events ...publish.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Connect(ctx); err != nil {
		t.Fatalf("connect %s: %v", s.Name(), err)
	}
	if err := s.Write(ctx, events); err != nil {
		t.Fatalf("write %s: %v", s.Name(), err)
	}
}

// checkHistory runs herald history with src and checks table and JSON.
func checkHistory(t *testing.T, group string, src ...string) {
	t.Helper()
	out, stderr, code := heraldRun(t, nil, append([]string{"history", group}, src...)...)
	if code != 0 || !strings.Contains(out, "alpha (n_0000000001)") || !strings.Contains(out, "resigned") || !strings.Contains(out, "bravo (n_0000000002)") {
		t.Fatalf("history %v: exit %d:\n%s%s", src, code, out, stderr)
	}
	out, stderr, _ = heraldRun(t, nil, append([]string{"history", group, "--json"}, src...)...)
	var ts []audit.Tenure
	if err := json.Unmarshal([]byte(out), &ts); err != nil || len(ts) != 2 || ts[0].Term != 10 || ts[0].Reason != elect.ReasonResigned || !ts[1].Open() {
		t.Fatalf("history %v --json: %v\n%s%s", src, err, out, stderr)
	}
}

func checkWho(t *testing.T, group string, src ...string) {
	t.Helper()
	out, stderr, code := heraldRun(t, nil, append([]string{"who", group, "--json"}, src...)...)
	var r whoReport
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.Owner == nil || r.Owner.ID != "bravo" || r.Owner.Term != 20 {
		t.Fatalf("who %v: exit %d, %v:\n%s%s", src, code, err, out, stderr)
	}
	out, _, code = heraldRun(t, nil, append([]string{"who", group}, src...)...)
	if code != 0 || !strings.Contains(out, "owner bravo") || !strings.Contains(out, "only known to ZooKeeper") {
		t.Fatalf("who %v table: exit %d:\n%s", src, code, out)
	}
	// No bridge has stored a heartbeat here: a group the store holds
	// nothing of may have an owner no bridge has read yet.
	out, stderr, code = heraldRun(t, nil, append([]string{"who", group + "-nobody"}, src...)...)
	if code != exitStale || !strings.Contains(out, "owner unknown") {
		t.Fatalf("who %v on an unknown group, no heartbeat stored: exit %d, want %d, owner unknown: %s%s", src, code, exitStale, out, stderr)
	}
}

// checkTail follows the group from an hour ago: the stored story first,
// then an event written while tail runs.
func checkTail(t *testing.T, group string, s publish.Sink, src ...string) {
	t.Helper()
	p := start(t, nil, append([]string{"--log-level", "warn", "tail", group, "--since", "1h", "--count", "5"}, src...)...)
	if err := waitFor(20*time.Second, func() bool { return strings.Count(p.out.String(), "\n") >= 4 }); err != nil {
		t.Fatalf("tail %v printed no story:\n%s", src, p.out)
	}
	write(t, s, finalLoss(group))
	if code := p.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("tail %v: exit %d:\n%s", src, code, p.out)
	}
	lines := strings.Split(strings.TrimSpace(p.out.String()), "\n")
	if len(lines) != 5 || !strings.Contains(lines[0], "leader.elected") || !strings.Contains(lines[0], "owner=alpha(n_0000000001)") ||
		!strings.Contains(lines[4], "leader.lost") || !strings.Contains(lines[4], `reason="session expired"`) {
		t.Fatalf("tail %v lines:\n%s", src, p.out)
	}
	out, stderr, code := heraldRun(t, nil, append([]string{"tail", group, "--since", "1h", "--count", "2", "--json"}, src...)...)
	var e publish.Event
	first, _, _ := strings.Cut(out, "\n")
	if code != 0 || strings.Count(out, "\n") != 2 || json.Unmarshal([]byte(first), &e) != nil || e.Type != publish.LeaderElected || e.Owner.ID != "alpha" {
		t.Fatalf("tail %v --json: exit %d:\n%s%s", src, code, out, stderr)
	}
}

func TestFromNATS(t *testing.T) {
	srv := natsserver.Start(t)
	g := uniq(t)
	js, err := jetstream.New(jetstream.Config{Conn: natssink.Options{URL: srv.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { js.Close() })
	write(t, js, story(g)...)
	src := []string{"--nats", srv.URL()}
	checkHistory(t, g, src...)
	checkWho(t, g, src...)
	checkTail(t, g, js, src...)
}

func TestFromKafka(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	kc := kafkatest.Start(t)
	g := uniq(t)
	ks, err := kafkasink.New(kafkasink.Config{Brokers: kc.Addrs(), Partitions: 1, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ks.Close() })
	write(t, ks, story(g)...)
	src := []string{"--kafka", strings.Join(kc.Addrs(), ",")}
	checkHistory(t, g, src...)
	checkWho(t, g, src...)
	checkTail(t, g, ks, src...)
}

func TestHistoryFromAudit(t *testing.T) {
	g := uniq(t)
	path := filepath.Join(t.TempDir(), "audit.log")
	as, err := audit.New(path)
	if err != nil {
		t.Fatal(err)
	}
	write(t, as, story(g)...)
	write(t, as, story(g)...) // delivered twice: counted once
	if err := as.Close(); err != nil {
		t.Fatal(err)
	}
	checkHistory(t, g, "--audit", path)
	out, _, code := heraldRun(t, nil, "history", "--audit", path)
	if code != 0 || strings.Count(out, g) != 2 {
		t.Fatalf("history of every group:\n%s", out)
	}
}

// TestReadersSayWhereTheKafkaTopicsComeFrom: who, history and tail against
// brokers where no bridge has made herald's topics yet say so, and how to
// mend it, instead of Kafka's bare "Unknown Topic Or Partition".
func TestReadersSayWhereTheKafkaTopicsComeFrom(t *testing.T) {
	kc := kafkatest.Start(t)
	src := []string{"--kafka", strings.Join(kc.Addrs(), ",")}
	for _, args := range [][]string{{"who", "/g"}, {"history", "/g"}, {"tail", "/g", "--count", "1"}} {
		_, stderr, code := heraldRun(t, nil, append(args, src...)...)
		if code != 1 || !strings.Contains(stderr, "does not exist") || !strings.Contains(stderr, "a herald bridge with --kafka makes it") {
			t.Errorf("herald %v against brokers without herald's topics: exit %d, want 1 and a hint:\n%s", args, code, stderr)
		}
	}
}
