package kafkasink

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/sinktest"
)

// kcat reads a topic from the start with franz-go, a client independent of
// the one under test, the way kcat -C -f '%k %h' would.
func kcat(t *testing.T, addrs []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	if len(out) < n {
		t.Fatalf("%s: consumed %d records, want %d", topic, len(out), n)
	}
	return out
}

func header(r *kgo.Record, k string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == k {
			return string(h.Value), true
		}
	}
	return "", false
}

func topicConfig(t *testing.T, addrs []string, topic string) map[string]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeTopic
	res.ResourceName = topic
	req.Resources = append(req.Resources, res)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("describe configs of %s: %v", topic, err)
	}
	out := map[string]string{}
	for _, r := range resp.Resources {
		for _, c := range r.Configs {
			if c.Value != nil {
				out[c.Name] = *c.Value
			}
		}
	}
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil || len(mresp.Topics) != 1 {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	out["partitions"] = itoa(int64(len(mresp.Topics[0].Partitions)))
	return out
}

func TestConnectCreatesTopicsWithTheirConfigs(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := testConfig(t, c)
	connected(t, cfg)
	ev := topicConfig(t, c.Addrs(), cfg.EventsTopic)
	ow := topicConfig(t, c.Addrs(), cfg.OwnersTopic)
	if ow["cleanup.policy"] != "compact" || ow["partitions"] != "3" || ow["delete.retention.ms"] != "604800000" {
		t.Fatalf("owners topic: cleanup.policy=%q partitions=%s delete.retention.ms=%s, want compact, 3 and a week (604800000)",
			ow["cleanup.policy"], ow["partitions"], ow["delete.retention.ms"])
	}
	if ev["cleanup.policy"] != "delete" || ev["partitions"] != "3" {
		t.Fatalf("events topic: cleanup.policy=%q partitions=%s, want delete and 3", ev["cleanup.policy"], ev["partitions"])
	}
	// Connecting again finds the topics and keeps them.
	connected(t, cfg)
}

func TestKeysAndHeadersAsKcatSeesThem(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := testConfig(t, c)
	s := connected(t, cfg)
	evs := sinktest.Events("kcat", 3, 4)
	if err := s.Write(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	recs := kcat(t, c.Addrs(), cfg.EventsTopic, len(evs))
	partOf := map[string]int32{}
	byID := map[string]publish.Event{}
	for _, e := range evs {
		byID[e.ID] = e
	}
	for _, r := range recs {
		id, _ := header(r, "ce_id")
		e, ok := byID[id]
		if !ok {
			t.Fatalf("record with ce_id %q not written", id)
		}
		if string(r.Key) != e.Group {
			t.Fatalf("key %q, want the group path %q", r.Key, e.Group)
		}
		for k, want := range map[string]string{
			"ce_specversion": "1.0", "ce_type": string(e.Type), "ce_subject": e.Group,
			"ce_source": e.Source, "ce_term": itoa(e.Term), "content-type": "application/json",
		} {
			if got, _ := header(r, k); got != want {
				t.Fatalf("header %s=%q, want %q", k, got, want)
			}
		}
		if p, ok := partOf[e.Group]; ok && p != r.Partition {
			t.Fatalf("group %s spread over partitions %d and %d", e.Group, p, r.Partition)
		}
		partOf[e.Group] = r.Partition
	}
}

func TestOwnersTopicCoalescesAndTombstones(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := testConfig(t, c)
	s := connected(t, cfg)
	a := &publish.Participant{ID: "a", Node: "n_0000000001"}
	b := &publish.Participant{ID: "b", Node: "n_0000000002"}
	mk := func(typ publish.Type, g string, owner, prev *publish.Participant, term int64) publish.Event {
		return publish.Event{Type: typ, Group: g, Recipe: elect.RecipeElection, Owner: owner, Previous: prev,
			Term: term, Zxid: term, Time: time.Now().UTC(), Source: "test"}.WithID()
	}
	lost := mk(publish.LeaderLost, "/one", nil, a, 10)
	lost.Reason = elect.ReasonResigned
	batch := []publish.Event{
		mk(publish.LeaderElected, "/one", a, nil, 10), lost, // ends with no owner
		mk(publish.LeaderElected, "/two", a, nil, 10), mk(publish.LeaderElected, "/two", b, a, 20),
	}
	if err := s.Write(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	// A late loss of a, the older owner of /two, must not erase b.
	late := mk(publish.LeaderLost, "/two", nil, a, 10)
	if err := s.Write(context.Background(), []publish.Event{late}); err != nil {
		t.Fatal(err)
	}
	recs := kcat(t, c.Addrs(), cfg.OwnersTopic, 2)
	quiet, stop := context.WithTimeout(context.Background(), time.Second)
	defer stop()
	if more := kcatMore(quiet, c.Addrs(), cfg.OwnersTopic); more > 2 {
		t.Fatalf("owners topic holds %d records, want one per group (coalesced, late loss skipped)", more)
	}
	for _, r := range recs {
		switch string(r.Key) {
		case "/one":
			if r.Value != nil {
				t.Fatalf("/one: value %s, want a tombstone", r.Value)
			}
			if _, ok := header(r, EventHeader); !ok {
				t.Fatal("/one: tombstone lacks the herald_event header")
			}
		case "/two":
			if id, _ := header(r, "ce_id"); id != batch[3].ID || r.Value == nil {
				t.Fatalf("/two: record %s, want b's election", id)
			}
		default:
			t.Fatalf("unexpected key %q", r.Key)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := FollowOwners(ctx, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got := untilSynced(t, ctx, st)
	owners := map[string]string{}
	for _, u := range got {
		owners[u.Group] = "none"
		if o := u.Owner(); o != nil {
			owners[u.Group] = o.ID
		}
	}
	if owners["/one"] != "none" || owners["/two"] != "b" {
		t.Fatalf("followed owners %v, want /one none and /two b", owners)
	}
}

// kcatMore counts every record of a topic until ctx ends.
func kcatMore(ctx context.Context, addrs []string, topic string) int {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return -1
	}
	defer cl.Close()
	n := 0
	for ctx.Err() == nil {
		n += cl.PollFetches(ctx).NumRecords()
	}
	return n
}
