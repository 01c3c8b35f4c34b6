package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// TestWhoOwnerValueThatIsNoOwner: a group whose owners-bucket value was
// replaced by something that is no herald owner (malformed JSON written by
// hand) is not "no owner" (exit 5, which a script takes for a free lock):
// who says the value cannot be read and to ask ZooKeeper (exit 1), and
// history shows the open tenure as not confirmed instead of holding.
func TestWhoOwnerValueThatIsNoOwner(t *testing.T) {
	url, s := jetStreamSink(t)
	g := uniq(t)
	write(t, s, story(g)...)
	out, stderr, code := heraldRun(t, nil, "who", g, "--nats", url)
	if code != 0 || !strings.Contains(out, "bravo") {
		t.Fatalf("who --nats: exit %d, want bravo:\n%s%s", code, out, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := natsserver.JetStream(t, url).KeyValue(ctx, jetstream.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, publish.MustTokens(g), []byte(`{"group":"`+g+`", garbage`)); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{}, {"--json"}} {
		out, stderr, code = heraldRun(t, nil, append([]string{"who", g, "--nats", url}, args...)...)
		if code != 1 || !strings.Contains(stderr, "no owner herald wrote") || !strings.Contains(stderr, "herald who --zk") {
			t.Errorf("who --nats %v of a malformed value: exit %d, want 1 saying the value is no owner and to ask ZooKeeper:\n%s%s", args, code, out, stderr)
		}
	}
	out, stderr, code = heraldRun(t, nil, "history", g, "--nats", url)
	if code != 0 || !strings.Contains(out, "open, not confirmed") || strings.Contains(out, "holding") || !strings.Contains(stderr, "no owner herald wrote") {
		t.Errorf("history --nats with a malformed owner value: exit %d, want bravo open, not confirmed, and a warning:\n%s%s", code, out, stderr)
	}
}

// TestWhoKafkaOwnerRecordThatIsNoOwner: a group whose only record in the
// owners topic is no herald owner (produced by hand) is not "no owner"
// (exit 5), though a bridge's heartbeat confirms every group: who says the
// record cannot be read and to ask ZooKeeper (exit 1).
func TestWhoKafkaOwnerRecordThatIsNoOwner(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	kc := kafkatest.Start(t)
	ks, err := kafkasink.New(kafkasink.Config{Brokers: kc.Addrs(), Partitions: 1, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ks.Close() })
	write(t, ks, story(uniq(t)+"-other")...) // makes the topics
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := publish.Heartbeat{Source: "test", State: publish.BridgeActive, Time: time.Now(), Interval: time.Minute}
	h.Confirmed = h.Time
	if err := ks.WriteHeartbeat(ctx, h); err != nil {
		t.Fatal(err)
	}
	g := uniq(t)
	w := &kafka.Writer{Addr: kafka.TCP(kc.Addrs()...), Topic: kafkasink.DefaultOwnersTopic, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Key: []byte(g), Value: []byte(`{"garbage`)}); err != nil {
		t.Fatal(err)
	}
	src := strings.Join(kc.Addrs(), ",")
	out, stderr, code := heraldRun(t, nil, "who", g, "--kafka", src)
	if code != 1 || !strings.Contains(stderr, "no owner herald wrote") || !strings.Contains(stderr, "herald who --zk") {
		t.Errorf("who --kafka of a group whose record is malformed: exit %d, want 1 saying the record is no owner and to ask ZooKeeper:\n%s%s", code, out, stderr)
	}
}

// TestWhoNotesAGroupWithoutEvents: who --nats of a path no bridge ever
// published an event of, under a bridge that confirms every group (a
// mistyped lock path, say), still says no owner (exit 5), but notes that
// nothing of the group is stored and to check the path against ZooKeeper,
// rather than reading like a lock seen free.
func TestWhoNotesAGroupWithoutEvents(t *testing.T) {
	url, s := jetStreamSink(t)
	other := uniq(t) + "-other"
	write(t, s, story(other)...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := publish.Heartbeat{Source: "test", State: publish.BridgeActive, Time: time.Now(), Interval: time.Minute}
	h.Confirmed = h.Time
	if err := s.WriteHeartbeat(ctx, h); err != nil {
		t.Fatal(err)
	}
	g := uniq(t) + "-mistyped"
	out, stderr, code := heraldRun(t, nil, "who", g, "--nats", url)
	if code != exitNoOwner || !strings.Contains(out, "note: no event of "+g+" is stored") || !strings.Contains(out, "herald who --zk") {
		t.Errorf("who --nats of a path without events: exit %d, want %d and a note to check the path:\n%s%s", code, exitNoOwner, out, stderr)
	}
	out, stderr, code = heraldRun(t, nil, "who", other, "--nats", url)
	if code != 0 || strings.Contains(out, "note:") {
		t.Errorf("who --nats of a group with events: exit %d, want 0 and no note:\n%s%s", code, out, stderr)
	}
}

// TestWhoOnHeraldsOwnNodes: who given a group's office or checkpoint, or
// a session root, read them as groups with no owner (exit 5), the office
// with its session nodes as "below it" to try next. The office and the
// checkpoint are refused before connecting, naming the group to ask
// about; a session root says what its children are.
func TestWhoOnHeraldsOwnNodes(t *testing.T) {
	for _, p := range []string{"/jobs/nightly/" + elect.OfficeNode, "/jobs/nightly/" + elect.CheckpointNode} {
		_, stderr, code := heraldRun(t, nil, "--zk", "127.0.0.1:1", "who", p)
		if code != exitUsage || !strings.Contains(stderr, "not a group: herald who /jobs/nightly") {
			t.Errorf("who %s: exit %d, want %d naming the group: %s", p, code, exitUsage, stderr)
		}
	}
	zk := zkFlags(t)
	g := uniq(t)
	root := g + "-sessions"
	holder := start(t, nil, append(zk, "lock", "--lock", g, "--session-root", root, "--", "sleep", "30")...)
	holder.waitOutput(t, "lock acquired", 20*time.Second)
	out, stderr, code := heraldRun(t, nil, append(zk, "who", root)...)
	if code != exitNoOwner || !strings.Contains(out, "herald's session root: session nodes of herald run or lock copies, 1 now, each telling the next copy when its owner's session ended, and notes of running commands, 1 now") {
		t.Errorf("who %s: exit %d, want %d saying it is a session root:\n%s%s", root, code, exitNoOwner, out, stderr)
	}
}

// TestWhoBeforeAnyHeartbeatIsNotNoOwner: who --nats of a group the owners
// bucket holds nothing of, while no bridge has sent a heartbeat (one
// starting has made its stores and not yet read its groups), says the
// owner is unknown and exits stale: the group may have an owner. It said
// "no owner" (exit 5), not stale.
func TestWhoBeforeAnyHeartbeatIsNotNoOwner(t *testing.T) {
	t.Parallel()
	url, s := jetStreamSink(t)
	other := uniq(t) + "-other"
	write(t, s, story(other)...)
	g := uniq(t) + "-unread"
	out, stderr, code := heraldRun(t, nil, "who", g, "--nats", url)
	if code != exitStale || !strings.Contains(out, "owner unknown") || !strings.Contains(out, "no bridge has sent a heartbeat") {
		t.Errorf("who --nats of a group no bridge has confirmed, with no heartbeat stored: exit %d, want %d, owner unknown, saying no heartbeat came:\n%s%s", code, exitStale, out, stderr)
	}
}

// TestWhoOwnerNamingNoBridgeIsNotJudged: an owner value that names no
// bridge (written by a herald from before values named their bridge),
// with no heartbeat stored, is from a writer that sends none: who shows
// the owner, not judged (exit 0). It said stale, "nothing confirms that
// the group has no owner", beside the owner, and exited 4: the absence's
// judgement was taken for a value that names no writer.
func TestWhoOwnerNamingNoBridgeIsNotJudged(t *testing.T) {
	t.Parallel()
	url, s := jetStreamSink(t)
	g := uniq(t)
	es := story(g)
	for i := range es {
		es[i].Source = ""
	}
	write(t, s, es...)
	out, stderr, code := heraldRun(t, nil, "who", g, "--nats", url)
	if code != 0 || !strings.Contains(out, "bravo") || strings.Contains(out, "has no owner") {
		t.Errorf("who --nats of an owner value naming no bridge, no heartbeat stored: exit %d, want 0, bravo, not judged:\n%s%s", code, out, stderr)
	}
}
