package kafkasink

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
)

// hbInterval is the heartbeat interval of these tests: values stay fresh
// for publish.MinStaleAfter (1s) after a heartbeat.
const hbInterval = 100 * time.Millisecond

func hbConfig(t *testing.T, c *kafkatest.Cluster) Config {
	cfg := testConfig(t, c)
	cfg.BridgesTopic = strings.Replace(cfg.OwnersTopic, ".owners.", ".bridges.", 1)
	return cfg
}

func beat(t *testing.T, s *Sink, src string, st publish.BridgeState, ha string) publish.Heartbeat {
	t.Helper()
	now := time.Now()
	h := publish.Heartbeat{Source: src, State: st, Time: now, Interval: hbInterval, HA: ha}
	if st == publish.BridgeActive {
		h.Confirmed = now
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.WriteHeartbeat(ctx, h); err != nil {
		t.Fatalf("WriteHeartbeat(%s %s): %v", src, st, err)
	}
	return h
}

func gainFrom(group, node string, term int64, src string) publish.Event {
	return publish.Event{Type: publish.LeaderElected, Group: group, Recipe: elect.RecipeElection,
		Owner: &publish.Participant{ID: node, Node: node}, Term: term, Zxid: term, Time: time.Now(), Source: src}.WithID()
}

func writeEvents(t *testing.T, s *Sink, evs ...publish.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Write(ctx, evs); err != nil {
		t.Fatal(err)
	}
}

func followOwners(t *testing.T, cfg Config, group string, opts ...FollowOption) *Stream[OwnerUpdate] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	st, err := FollowOwners(ctx, cfg, group, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func nextOwner(t *testing.T, st *Stream[OwnerUpdate], d time.Duration) OwnerUpdate {
	t.Helper()
	select {
	case u, ok := <-st.C():
		if !ok {
			t.Fatalf("stream ended: %v", st.Err())
		}
		return u
	case <-time.After(d):
		t.Fatalf("no owner update within %v", d)
	}
	return OwnerUpdate{}
}

func TestWriteHeartbeatCreatesTopic(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := hbConfig(t, c)
	s := connected(t, cfg)
	h := beat(t, s, "bridge@host.example.com", publish.BridgeActive, "/ha")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, tr, err := cfg.client()
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseIdleConnections()
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{cfg.BridgesTopic}})
	if err != nil || len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 1 {
		t.Fatalf("bridges topic metadata %+v %v: want one topic of one partition", md, err)
	}
	if err := checkCompacted(ctx, cl, cfg.BridgesTopic); err != nil {
		t.Fatalf("bridges topic not compacted: %v", err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: cfg.Brokers, Topic: cfg.BridgesTopic, Partition: 0, Dialer: cfg.dialer(), MaxWait: 250 * time.Millisecond})
	defer r.Close()
	m, err := r.ReadMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := publish.DecodeHeartbeat(m.Value)
	if err != nil || string(m.Key) != h.Source || got.Source != h.Source || got.State != publish.BridgeActive || got.HA != "/ha" || !got.Time.Equal(h.Time) {
		t.Fatalf("record key %q value %s (%v): want %+v", m.Key, m.Value, err, h)
	}
	bad := testConfig(t, c)
	bad.BridgesTopic = bad.OwnersTopic
	if err := bad.Validate(); err == nil {
		t.Fatal("heartbeats in the owners topic accepted")
	}
}

// A group whose bridge goes quiet is delivered again, stale, after the
// bound; fresh again with the next heartbeat; stale at once when the bridge
// says it stopped.
func TestFollowOwnersStaleness(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := hbConfig(t, c)
	s := connected(t, cfg)
	const g = "/stale/g"
	before := time.Now()
	beat(t, s, "b1", publish.BridgeActive, "")
	writeEvents(t, s, gainFrom(g, "a", 100, "b1"))

	st := followOwners(t, cfg, g)
	u := nextOwner(t, st, 20*time.Second)
	if u.Owner() == nil || u.Owner().Node != "a" || u.Stale || u.ConfirmedBy != "b1" {
		t.Fatalf("first update %+v: want a, fresh, confirmed by b1", u)
	}
	u2 := nextOwner(t, st, 10*time.Second)
	if !u2.Stale || u2.Offset != u.Offset || u2.Owner() == nil || !strings.Contains(u2.StaleReason, "no heartbeat") {
		t.Fatalf("after the bound: %+v, want the same record again, stale", u2)
	}
	if d := time.Since(before); d < publish.MinStaleAfter {
		t.Fatalf("stale after %v, before the bound", d)
	}
	beat(t, s, "b1", publish.BridgeActive, "")
	if u = nextOwner(t, st, 10*time.Second); u.Stale {
		t.Fatalf("after a heartbeat: %+v, want fresh", u)
	}
	beat(t, s, "b1", publish.BridgeStopped, "")
	if u = nextOwner(t, st, 10*time.Second); !u.Stale || !strings.Contains(u.StaleReason, "stopped") {
		t.Fatalf("after the bridge stopped: %+v, want stale", u)
	}
}

// A takeover's re-statement is a duplicate, not delivered as a change, but
// it makes the group confirmed by the new bridge: the group is delivered
// again, fresh.
func TestFollowOwnersTakeover(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := hbConfig(t, c)
	s := connected(t, cfg)
	const g = "/takeover/g"
	beat(t, s, "b1", publish.BridgeActive, "")
	e := gainFrom(g, "a", 100, "b1")
	writeEvents(t, s, e)
	beat(t, s, "b1", publish.BridgeStopped, "")
	st := followOwners(t, cfg, g)
	if u := nextOwner(t, st, 20*time.Second); !u.Stale {
		t.Fatalf("b1 stopped: %+v, want stale", u)
	}
	beat(t, s, "b2", publish.BridgeActive, "")
	e.Source, e.Snapshot = "b2", true
	writeEvents(t, s, e)
	u := nextOwner(t, st, 10*time.Second)
	if u.Stale || u.ConfirmedBy != "b2" || u.Owner() == nil || u.Owner().Node != "a" {
		t.Fatalf("after b2 re-stated it: %+v, want a, fresh, confirmed by b2", u)
	}
}

// The active bridge of the writer's HA election confirms its values.
func TestFollowOwnersHAElection(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := hbConfig(t, c)
	s := connected(t, cfg)
	const g = "/ha/g"
	beat(t, s, "b1", publish.BridgeActive, "/ha")
	writeEvents(t, s, gainFrom(g, "a", 100, "b1"))
	beat(t, s, "b1", publish.BridgeStopped, "/ha")
	st := followOwners(t, cfg, "")
	if u := nextOwner(t, st, 20*time.Second); !u.Stale {
		t.Fatalf("b1 stopped: %+v, want stale", u)
	}
	beat(t, s, "other", publish.BridgeActive, "/another-ha")
	beat(t, s, "b2", publish.BridgeActive, "/ha")
	if u := nextOwner(t, st, 10*time.Second); u.Stale || u.ConfirmedBy != "b2" || u.Event.Source != "b1" {
		t.Fatalf("b2 active in b1's election: %+v, want b1's record, fresh, confirmed by b2", u)
	}
}

// Without a bridges topic (no bridge wrote a heartbeat) values are not
// judged; a heartbeat written later, once the topic exists, is found.
func TestFollowOwnersWithoutHeartbeats(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := hbConfig(t, c)
	s := connected(t, cfg)
	const g = "/none/g"
	writeEvents(t, s, gainFrom(g, "a", 100, "b1"))
	st := followOwners(t, cfg, g)
	u := nextOwner(t, st, 20*time.Second)
	if u.Owner() == nil || u.Stale || u.BridgeState != "" {
		t.Fatalf("without heartbeats: %+v, want a, not judged", u)
	}
	beat(t, s, "b1", publish.BridgeStopped, "")
	if u = nextOwner(t, st, 30*time.Second); !u.Stale || u.ConfirmedBy != "b1" {
		t.Fatalf("after b1's first heartbeat (stopped): %+v, want stale", u)
	}
}

// TestFollowOwnersHeartbeatDeletedIsStale: the heartbeat of a bridge that
// died is deleted from the bridges topic (a tombstone under its key,
// written by hand or a tool when the bridge was taken down). The follower
// used to skip the tombstone as a record that is no heartbeat, keeping the
// deleted heartbeat, so the bridge's values stayed fresh until its bound
// passed (and a reader that started later judged them only then). They
// are stale at once now, saying why, for a reader that saw the deletion
// and for one that starts after it, as with the JetStream bucket.
func TestFollowOwnersHeartbeatDeletedIsStale(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := hbConfig(t, c)
	s := connected(t, cfg)
	const g = "/deleted/g"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A long interval: nothing but the tombstone makes the value stale
	// within this test.
	now := time.Now()
	if err := s.WriteHeartbeat(ctx, publish.Heartbeat{Source: "b1", State: publish.BridgeActive, Time: now, Confirmed: now, Interval: time.Minute}); err != nil {
		t.Fatal(err)
	}
	writeEvents(t, s, gainFrom(g, "a", 100, "b1"))
	st := followOwners(t, cfg, g)
	if u := nextOwner(t, st, 20*time.Second); u.Owner() == nil || u.Stale || u.ConfirmedBy != "b1" {
		t.Fatalf("first update %+v: want a, fresh, confirmed by b1", u)
	}
	w := &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Topic: cfg.BridgesTopic, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	at := time.Now()
	if err := w.WriteMessages(ctx, kafka.Message{Key: []byte("b1"), Time: at}); err != nil {
		t.Fatal(err)
	}
	when := at.UTC().Format("2006-01-02T15:04:05.00Z07:00")
	u := nextOwner(t, st, 10*time.Second)
	if !u.Stale || u.Owner() == nil || u.ConfirmedBy != "b1" || !strings.Contains(u.StaleReason, "was deleted") || !strings.Contains(u.StaleReason, when) {
		t.Fatalf("after b1's heartbeat was deleted: %+v, want a, stale, saying its heartbeat was deleted at %s", u, when)
	}
	if u := nextOwner(t, followOwners(t, cfg, g), 20*time.Second); !u.Stale || !strings.Contains(u.StaleReason, "was deleted") {
		t.Fatalf("a reader started after the deletion: %+v, want stale, saying b1's heartbeat was deleted", u)
	}
}

// A value read before its bridge's first heartbeat (not judged yet) is
// delivered again once the bridge confirms it.
func TestFollowOwnersConfirmedAfterDelivery(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := hbConfig(t, c)
	s := connected(t, cfg)
	const g = "/late/g"
	beat(t, s, "other", publish.BridgeActive, "") // the bridges topic exists
	writeEvents(t, s, gainFrom(g, "a", 100, "late"))
	st := followOwners(t, cfg, g)
	u := nextOwner(t, st, 20*time.Second)
	if u.Owner() == nil || u.Stale || u.BridgeState != "" || !u.Confirmed.IsZero() {
		t.Fatalf("before any heartbeat of late: %+v; want a, not judged", u)
	}
	h := beat(t, s, "late", publish.BridgeActive, "")
	u = nextOwner(t, st, 10*time.Second)
	if u.Owner() == nil || u.Stale || u.ConfirmedBy != "late" || u.BridgeState != publish.BridgeActive || !u.Confirmed.Equal(h.Time) {
		t.Fatalf("after late's first heartbeat: %+v; want a, confirmed by it", u)
	}
}

// A reader cut off from the brokers cannot tell a quiet bridge from its
// own silence: the value turns stale once its bound passes, as ever, but
// the reason names the reader's trouble; with the brokers back, the next
// heartbeat makes it fresh again.
func TestFollowOwnersReaderCutOffSaysSo(t *testing.T) {
	defer func(d time.Duration) { idleLook = d }(idleLook)
	idleLook = time.Second // look at the brokers soon when nothing comes
	c := kafkatest.Start(t)
	cfg := hbConfig(t, c)
	s := connected(t, cfg)
	const g = "/cutoff/g"
	// Fresh for 9 s after each heartbeat: time for the reader to find
	// that it cannot reach the brokers before the value turns stale.
	slow := func() {
		t.Helper()
		now := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := s.WriteHeartbeat(ctx, publish.Heartbeat{Source: "b1", State: publish.BridgeActive, Time: now, Confirmed: now, Interval: 3 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	slow()
	writeEvents(t, s, gainFrom(g, "a", 100, "b1"))
	st := followOwners(t, cfg, g)
	if u := nextOwner(t, st, 20*time.Second); u.Stale {
		t.Fatalf("first update %+v: want fresh", u)
	}
	c.Stop()
	u := nextOwner(t, st, 20*time.Second)
	if !u.Stale || !strings.Contains(u.StaleReason, "this reader has not been able to read the bridges topic") || !strings.Contains(u.StaleReason, "the bridge may still be publishing") {
		t.Fatalf("brokers gone: %+v, want stale, saying the reader cannot read", u)
	}
	c.Restart(t)
	slow()
	if u := nextOwner(t, st, 30*time.Second); u.Stale {
		t.Fatalf("brokers back, bridge confirming: %+v, want fresh", u)
	}
}

// A bridges topic that exists but cannot be read (its partition's leader
// not available) leaves no value unjudged: a value whose bridge has no
// heartbeat in hand is stale, saying why, not passed as fresh as when no
// bridge ever wrote a heartbeat. Once the topic can be read, the bridge's
// heartbeat confirms it.
func TestFollowOwnersBridgesTopicUnreadable(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := hbConfig(t, c)
	s := connected(t, cfg)
	const g = "/unreadable/g"
	beat(t, s, "b1", publish.BridgeActive, "")
	writeEvents(t, s, gainFrom(g, "a", 100, "b1"))
	var refuse atomic.Bool
	refuse.Store(true)
	kc := c.Kfake()
	kc.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		r := req.(*kmsg.ListOffsetsRequest)
		if !refuse.Load() || len(r.Topics) != 1 || r.Topics[0].Topic != cfg.BridgesTopic {
			return nil, nil, false
		}
		resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = cfg.BridgesTopic
		for _, p := range r.Topics[0].Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.LeaderNotAvailable.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
	st := followOwners(t, cfg, g)
	u := nextOwner(t, st, 20*time.Second)
	if !u.Stale || !strings.Contains(u.StaleReason, "heartbeats cannot be read") {
		t.Fatalf("first update with the bridges topic unreadable: %+v, want stale, saying the heartbeats cannot be read", u)
	}
	refuse.Store(false)
	if u := nextOwner(t, st, 30*time.Second); u.Stale || u.ConfirmedBy != "b1" || u.BridgeState != publish.BridgeActive {
		t.Fatalf("bridges topic readable again: %+v, want fresh, confirmed by b1", u)
	}
}

// A bridges topic whose records cannot be fetched (the reader may not
// read it, say) while the brokers still answer where it ends: the reader
// cannot read heartbeats, and a value whose heartbeat goes quiet says so
// rather than blaming the bridge.
func TestFollowOwnersBridgesTopicNotFetched(t *testing.T) {
	defer func(d time.Duration) { idleLook = d }(idleLook)
	idleLook = time.Second
	c := kafkatest.Start(t)
	cfg := hbConfig(t, c)
	s := connected(t, cfg)
	const g = "/notfetched/g"
	now := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.WriteHeartbeat(ctx, publish.Heartbeat{Source: "b1", State: publish.BridgeActive, Time: now, Confirmed: now, Interval: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	writeEvents(t, s, gainFrom(g, "a", 100, "b1"))
	st := followOwners(t, cfg, g)
	if u := nextOwner(t, st, 20*time.Second); u.Stale {
		t.Fatalf("first update %+v: want fresh", u)
	}
	kc := c.Kfake()
	kc.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		r := req.(*kmsg.FetchRequest)
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		refused := false
		for _, rt := range r.Topics {
			if rt.Topic != cfg.BridgesTopic {
				continue
			}
			refused = true
			t := kmsg.NewFetchResponseTopic()
			t.Topic = rt.Topic
			for _, p := range rt.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				t.Partitions = append(t.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, t)
		}
		if !refused {
			return nil, nil, false
		}
		return resp, nil, true
	})
	u := nextOwner(t, st, 30*time.Second)
	if !u.Stale || !strings.Contains(u.StaleReason, "this reader has not been able to read the bridges topic") {
		t.Fatalf("bridges topic not fetched: %+v, want stale, saying the reader cannot read it", u)
	}
}
