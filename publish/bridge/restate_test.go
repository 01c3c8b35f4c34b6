package bridge_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"
	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// restateBound is how long a sink may take to have every group's owner
// back once its owners store was deleted and a group changed: a failed
// write, a reconnect (the store made again) and the restatement. Several
// seconds of slack: other tests share the machine.
const restateBound = 30 * time.Second

// storeLost sets up what both tests below share: two groups with an
// owner, and a bridge publishing them to sink and to an audit log. It
// returns the groups, the bridge and a function reading the audit log.
func storeLost(t *testing.T, sink publish.Sink) (g1, g2 string, h1 *elect.Handle, auditLog func() []publish.Event) {
	t.Helper()
	addrs := zkAddrs(t)
	base := groupPath(t)
	g1, g2 = base+"/one", base+"/two"
	s := session(t, addrs)
	h1 = leads(t, candidate(t, s, g1, "owner-one"))
	leads(t, candidate(t, s, g2, "owner-two"))
	path := filepath.Join(t.TempDir(), "audit.log")
	as, err := audit.New(path)
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, bridge.Config{Servers: addrs, Watch: []string{g1, g2}, Sinks: []publish.Sink{sink, as},
		Lossless: []string{"audit"}, Logger: testLogger(t)})
	waitStatus(t, r.Bridge, 20*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 })
	auditLog = func() []publish.Event {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		evs, err := audit.ReadAll(ctx, path, nil)
		if err != nil {
			t.Fatalf("read the audit log: %v", err)
		}
		return evs
	}
	return g1, g2, h1, auditLog
}

// changeOne makes one group change owner (its owner, h, resigns to a
// candidate that joined, "owner-new"), so the bridge writes to the sink
// whose store is gone.
func changeOne(t *testing.T, group string, h *elect.Handle) {
	t.Helper()
	s := session(t, zkAddrs(t))
	next := candidate(t, s, group, "owner-new")
	queued(t, s, group, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Resign(ctx); err != nil {
		t.Fatalf("resign: %v", err)
	}
	leads(t, next)
}

// checkAuditNotFlooded fails when the audit log got a snapshot of a group
// after the bridge's start: the restatement is for the sink that lost its
// store, and only for it.
func checkAuditNotFlooded(t *testing.T, evs []publish.Event, groups ...string) {
	t.Helper()
	for _, g := range groups {
		n := 0
		for _, e := range evs {
			if e.Group == g && e.Snapshot && (e.Type.Gains() || e.Type.Loses()) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("the audit log holds %d owner snapshots of %s, want the 1 of the bridge's start: the restatement must go to the sink that lost its store only", n, g)
		}
	}
}

// natsOwner is the owner node of group in the owners bucket, as `herald
// who --nats` reads it ("" for none, or no bucket).
func natsOwner(t *testing.T, url, group string) string {
	t.Helper()
	if o := natsOwnerRecord(t, url, group); o != nil {
		return o.Owner.ID
	}
	return ""
}

// natsOwnerSource is the bridge that wrote group's owner in the bucket.
func natsOwnerSource(t *testing.T, url, group string) string {
	t.Helper()
	if o := natsOwnerRecord(t, url, group); o != nil {
		return o.Source
	}
	return ""
}

func natsOwnerRecord(t *testing.T, url, group string) *jetstream.Owner {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect to NATS: %v", err)
	}
	defer nc.Close()
	js, err := njs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w, err := jetstream.Follow(ctx, js, group)
	if err != nil {
		return nil
	}
	var last *jetstream.OwnerUpdate
	for {
		select {
		case u, ok := <-w.Updates():
			if !ok {
				return nil
			}
			if u.Group == group {
				last = &u
			}
			continue
		case <-w.Synced():
		case <-ctx.Done():
			return nil
		}
		break
	}
	for drained := false; !drained; {
		select {
		case u, ok := <-w.Updates():
			if ok && u.Group == group {
				last = &u
			}
			drained = !ok
		default:
			drained = true
		}
	}
	if last == nil {
		return nil
	}
	return last.Owner
}

// TestOwnersBucketDeletedIsRestated: an operator deletes the JetStream
// owners bucket while the bridge runs. The sink makes it again on its
// next write; then every group's owner must be back in it, not only the
// group that changed, or `herald who --nats` would say "no owner" of a
// group that has one while heartbeats keep the bridge looking healthy.
// The audit log, which lost nothing, gets no restatement.
func TestOwnersBucketDeletedIsRestated(t *testing.T) {
	url := natsURL(t)
	g1, g2, h1, auditLog := storeLost(t, jsSink(t, url))
	waitFor(t, 20*time.Second, "both owners in the bucket", func() bool {
		return natsOwner(t, url, g1) == "owner-one" && natsOwner(t, url, g2) == "owner-two"
	})

	deleteBucket(t, url, false)
	changeOne(t, g1, h1)

	waitFor(t, restateBound, "both owners back in the bucket made again", func() bool {
		return natsOwner(t, url, g1) == "owner-new" && natsOwner(t, url, g2) == "owner-two"
	})
	checkAuditNotFlooded(t, auditLog(), g1, g2)
}

// kafkaOwner is the owner id of group in the owners topic, as `herald who
// --kafka` reads it ("" for none).
func kafkaOwner(t *testing.T, cfg kafkasink.Config, group string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := kafkasink.FollowOwners(ctx, cfg, group)
	if err != nil {
		return ""
	}
	defer st.Close()
	var last *kafkasink.OwnerUpdate
	for {
		select {
		case u, ok := <-st.C():
			if !ok {
				return ""
			}
			last = &u
			continue
		case <-st.Synced():
		case <-ctx.Done():
			return ""
		}
		break
	}
	if last == nil || last.Owner() == nil {
		return ""
	}
	return last.Owner().ID
}

// TestOwnersTopicDeletedIsRestated is TestOwnersBucketDeletedIsRestated
// for Kafka: the owners topic deleted while the bridge runs is made again
// by the sink, and then holds every group's owner, not only the changed
// one's.
func TestOwnersTopicDeletedIsRestated(t *testing.T) {
	kc := kafkatest.Start(t)
	cfg, sink := kafkaStore(t, kc)
	g1, g2, h1, auditLog := storeLost(t, sink)
	waitFor(t, 20*time.Second, "both owners in the owners topic", func() bool {
		return kafkaOwner(t, cfg, g1) == "owner-one" && kafkaOwner(t, cfg, g2) == "owner-two"
	})
	deleteTopic(t, kc.Addrs(), cfg.OwnersTopic, false)
	waitFor(t, 10*time.Second, "the owners topic gone", func() bool { return kafkaOwner(t, cfg, g2) == "" })
	changeOne(t, g1, h1)

	waitFor(t, restateBound, "both owners back in the owners topic made again", func() bool {
		return kafkaOwner(t, cfg, g1) == "owner-new" && kafkaOwner(t, cfg, g2) == "owner-two"
	})
	checkAuditNotFlooded(t, auditLog(), g1, g2)
}

// kafkaStore is a Kafka sink on kc with topics of the test's own.
func kafkaStore(t *testing.T, kc *kafkatest.Cluster) (kafkasink.Config, publish.Sink) {
	t.Helper()
	topic := strings.ReplaceAll(strings.Trim(groupPath(t), "/"), "/", ".")
	cfg := kafkasink.Config{
		Brokers: kc.Addrs(), EventsTopic: topic + ".events", OwnersTopic: topic + ".owners", BridgesTopic: topic + ".bridges",
		Partitions: 1, ReplicationFactor: 1, WriteTimeout: 3 * time.Second, Logger: testLogger(t),
	}
	sink, err := kafkasink.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, sink
}

// deleteBucket deletes the owners bucket, as an operator would; remake
// then makes an empty one of the same name, as someone else would.
func deleteBucket(t *testing.T, url string, remake bool) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := njs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := js.DeleteKeyValue(ctx, jetstream.DefaultBucket); err != nil {
		t.Fatalf("delete the owners bucket: %v", err)
	}
	if remake {
		if _, err := js.CreateKeyValue(ctx, njs.KeyValueConfig{Bucket: jetstream.DefaultBucket, History: 1}); err != nil {
			t.Fatalf("make the owners bucket again: %v", err)
		}
	}
}

// TestOwnersBucketDeletedWhileIdleIsRestated: the owners bucket is
// deleted (or deleted and made again, empty, by someone else) while no
// group changes, so the bridge has nothing to write that would fail. Its
// look at the bucket while idle must find it and restate every owner:
// otherwise heartbeats would keep "no owner" looking fresh until some
// group changed.
func TestOwnersBucketDeletedWhileIdleIsRestated(t *testing.T) {
	for _, remake := range []bool{false, true} {
		name := "deleted"
		if remake {
			name = "made again by someone else"
		}
		t.Run(name, func(t *testing.T) {
			url := natsURL(t)
			g1, g2, _, auditLog := storeLost(t, jsSink(t, url))
			waitFor(t, 20*time.Second, "both owners in the bucket", func() bool {
				return natsOwner(t, url, g1) == "owner-one" && natsOwner(t, url, g2) == "owner-two"
			})
			deleteBucket(t, url, remake)
			if remake && natsOwner(t, url, g1) != "" {
				t.Fatal("the bucket made again already holds an owner: the test proves nothing")
			}
			waitFor(t, restateBound, "both owners back in the bucket, with no group changed", func() bool {
				return natsOwner(t, url, g1) == "owner-one" && natsOwner(t, url, g2) == "owner-two"
			})
			checkAuditNotFlooded(t, auditLog(), g1, g2)
		})
	}
}

// deleteTopic deletes the owners topic, as an operator would; remake then
// makes an empty, compacted one of the same name, as someone else would.
func deleteTopic(t *testing.T, addrs []string, topic string, remake bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(addrs...), Transport: tr}
	res, err := cl.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err != nil {
		t.Fatalf("delete the owners topic: %v", err)
	}
	for tp, err := range res.Errors {
		if err != nil {
			t.Fatalf("delete the owners topic %s: %v", tp, err)
		}
	}
	if !remake {
		return
	}
	cr, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: topic, NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"}},
	}}})
	if err != nil {
		t.Fatalf("make the owners topic again: %v", err)
	}
	for tp, err := range cr.Errors {
		if err != nil {
			t.Fatalf("make the owners topic %s again: %v", tp, err)
		}
	}
}

// TestOwnersTopicDeletedWhileIdleIsRestated is
// TestOwnersBucketDeletedWhileIdleIsRestated for Kafka.
func TestOwnersTopicDeletedWhileIdleIsRestated(t *testing.T) {
	for _, remake := range []bool{false, true} {
		name := "deleted"
		if remake {
			name = "made again by someone else"
		}
		t.Run(name, func(t *testing.T) {
			kc := kafkatest.Start(t)
			cfg, sink := kafkaStore(t, kc)
			g1, g2, _, auditLog := storeLost(t, sink)
			waitFor(t, 20*time.Second, "both owners in the owners topic", func() bool {
				return kafkaOwner(t, cfg, g1) == "owner-one" && kafkaOwner(t, cfg, g2) == "owner-two"
			})
			deleteTopic(t, kc.Addrs(), cfg.OwnersTopic, remake)
			if kafkaOwner(t, cfg, g1) != "" {
				t.Fatal("the owners topic still holds an owner after it was deleted: the test proves nothing")
			}
			waitFor(t, restateBound, "both owners back in the owners topic, with no group changed", func() bool {
				return kafkaOwner(t, cfg, g1) == "owner-one" && kafkaOwner(t, cfg, g2) == "owner-two"
			})
			checkAuditNotFlooded(t, auditLog(), g1, g2)
		})
	}
}
