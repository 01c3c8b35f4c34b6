package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// trimmedIdleGroup makes an idle group whose stored events were all
// dropped while its owner holds on: worker-1 is elected in g, a bridge
// publishes that to NATS and Kafka and goes on confirming it, then the stream is
// purged and the events topic's records deleted, as retention
// (--nats-max-age, the topic's retention.ms) drops the events of a group
// idle for longer. It returns g, the NATS URL and the Kafka brokers.
func trimmedIdleGroup(t *testing.T) (g, url, kafka string) {
	t.Helper()
	zk := zkFlags(t)
	g = uniq(t)
	url = natsserver.Start(t).URL()
	brokers := kafkatest.Start(t).Addrs()
	kafka = strings.Join(brokers, ",")
	// The group is there, empty, when the bridge first looks: it then
	// sees worker-1's election itself, in that group node (one made while
	// the bridge looked may have been made more than once, and its first
	// owner comes with a gap mark when other groups beside it come and go,
	// as the other tests' do).
	madeEmpty(t, g)
	b := start(t, nil, append([]string{"bridge", "--watch", g, "--nats", url, "--kafka", kafka, "--heartbeat", "200ms", "--source", "trim-1"}, zk...)...)
	if err := waitFor(30*time.Second, func() bool { return ownerlessConfirmed(t, g, url, "trim-1") }); err != nil {
		t.Fatalf("the bridge never published %s without an owner:\n%s", g, b.out)
	}
	stored := streamIDs(t, url, g)
	campaign(t, zkSession(t), g, "worker-1")
	for _, src := range [][]string{{"--nats", url}, {"--kafka", kafka}} {
		var out string
		if err := waitFor(30*time.Second, func() bool {
			out, _, _ = heraldRun(t, nil, append([]string{"history", g}, src...)...)
			return strings.Contains(out, "worker-1") && strings.Contains(out, "holding")
		}); err != nil {
			t.Fatalf("history %v never showed worker-1 holding:\n%s\nbridge:\n%s", src, out, b.out)
		}
	}
	// The bridge watched the group empty: its watch saw worker-1's gain,
	// which is no snapshot (a stall of the bridge may still bound it
	// with not_before, as who then says).
	var gain publish.Event
	if err := waitFor(10*time.Second, func() bool {
		for _, e := range stored.all() {
			if e.Type.Gains() && e.Owner != nil && e.Owner.ID == "worker-1" {
				gain = e
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("worker-1's gain never reached the stream: %+v", stored.all())
	}
	if gain.Snapshot {
		t.Fatalf("the bridge watching %s empty published worker-1's gain as a snapshot: %+v\nbridge:\n%s", g, gain, b.out)
	}
	time.Sleep(time.Second) // held a while, confirmed by the heartbeats
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := natsserver.JetStream(t, url).Stream(ctx, jetstream.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	deleteEvents(ctx, t, brokers)
	for _, src := range [][]string{{"--nats", url}, {"--kafka", kafka}} {
		out, stderr, _ := heraldRun(t, nil, "who", g, "--json", src[0], src[1])
		if !strings.Contains(out, "worker-1") || strings.Contains(out, `"stale":true`) {
			t.Fatalf("who %v after the events were dropped: want worker-1, fresh:\n%s%s", src, out, stderr)
		}
	}
	return g, url, kafka
}

// ownerlessConfirmed reports whether who, reading NATS, says g has no
// owner as the bridge source confirms it: its own snapshot of the group is
// in. Exit 5 alone is not that: a store the bridge has made but where it
// has written neither an event of g nor a heartbeat yet also reads "no
// owner", and an owner elected then came before the bridge's first look,
// which saw it in a snapshot (the bound history and who then give it were
// taken for a bridge that saw it late, under CI's parallel load).
func ownerlessConfirmed(t *testing.T, g, url, source string) bool {
	t.Helper()
	out, _, code := heraldRun(t, nil, "who", g, "--nats", url)
	return code == exitNoOwner && strings.Contains(out, "last confirmed by "+source+" ") && !strings.Contains(out, "no event of")
}

// madeEmpty makes group g, with no child, and its parents.
func madeEmpty(t *testing.T, g string) {
	t.Helper()
	c := zkSession(t).Conn()
	for i := 1; i <= len(g); i++ {
		if i < len(g) && g[i] != '/' {
			continue
		}
		if _, err := c.Create(g[:i], nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
}

// deleteEvents deletes every record of the events topic, as its
// retention would once they are old.
func deleteEvents(ctx context.Context, t *testing.T, brokers []string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(kafkasink.DefaultEventsTopic)
	meta.Topics = append(meta.Topics, mt)
	mres, err := meta.RequestWith(ctx, cl)
	if err != nil || len(mres.Topics) != 1 || len(mres.Topics[0].Partitions) == 0 {
		t.Fatalf("metadata of %s: %v %+v", kafkasink.DefaultEventsTopic, err, mres)
	}
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = kafkasink.DefaultEventsTopic
	for _, p := range mres.Topics[0].Partitions {
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = p.Partition, -1 // up to the high watermark
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	res, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range res.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("delete records of %s/%d: error code %d", rt.Topic, rp.Partition, rp.ErrorCode)
			}
		}
	}
}

// TestHistoryShowsAnOwnerWhoseEventsWereDropped: every stored event of an
// idle group aged out while its owner holds on. history read "no
// leadership or lock events recorded" (--json []), exit 0, while who named
// the owner, fresh. It now shows the owner's open tenure from the owners
// view's since, GAP maybe (the owners before it were dropped with their
// events), confirmed as that view says.
func TestHistoryShowsAnOwnerWhoseEventsWereDropped(t *testing.T) {
	g, url, kafka := trimmedIdleGroup(t)
	for _, src := range [][]string{{"--nats", url}, {"--kafka", kafka}} {
		out, stderr, code := heraldRun(t, nil, "history", g, src[0], src[1])
		if code != 0 || !strings.Contains(out, "worker-1") || !strings.Contains(out, "holding") || !strings.Contains(out, "maybe") {
			t.Errorf("history %v with every event dropped: exit %d, want worker-1 holding, GAP maybe:\n%s%s", src, code, out, stderr)
		}
		exact := gainSeen(t, g, src)
		ts := historyJSON(t, g, src[0], src[1])
		if len(ts) != 1 || ts[0].Owner.ID != "worker-1" || !ts[0].Open() || !ts[0].Gap || ts[0].Unconfirmed || ts[0].From.IsZero() || ts[0].FromSeen != exact || ts[0].HeldFor < time.Second {
			t.Errorf("history %v --json with every event dropped: %+v: want worker-1 open, gap, confirmed, from its start (seen exactly: %v, as who says), held ≥ 1s", src, ts, exact)
		}
		// All groups: the same row.
		out, stderr, code = heraldRun(t, nil, "history", src[0], src[1])
		if code != 0 || !strings.Contains(out, g) || !strings.Contains(out, "worker-1") {
			t.Errorf("history %v of all groups with every event dropped: exit %d, want %s's worker-1:\n%s%s", src, code, g, out, stderr)
		}
	}
}

// TestWhoCountsNoChangesExactlyWhenNoEventIsStored: every stored event of
// an idle group aged out while its owner holds on. who said an exact "0
// owner changes in the last hour" beside an owner gained seconds before;
// with no stored event the count is a lower bound, and the owner's gain,
// which the owners view dates within the hour, counts.
func TestWhoCountsNoChangesExactlyWhenNoEventIsStored(t *testing.T) {
	g, url, kafka := trimmedIdleGroup(t)
	for _, src := range [][]string{{"--nats", url}, {"--kafka", kafka}} {
		// The gain counts where the bridge saw it happen. The bridge
		// watched the group empty (trimmedIdleGroup), so it saw the gain,
		// but a stall of its process (CI's parallel tests) bounds it with
		// not_before: then it is no change it can vouch for.
		n := 0
		if gainSeen(t, g, src) {
			n = 1
		}
		out, stderr, code := heraldRun(t, nil, "who", g, src[0], src[1])
		if code != 0 || !strings.Contains(out, "owner worker-1") || !strings.Contains(out, fmt.Sprintf(", at least %d owner changes in the last hour (no event of the group is stored", n)) {
			t.Errorf("who %v with every event dropped: exit %d, want worker-1 and at least %d change, saying no event is stored:\n%s%s", src, code, n, out, stderr)
		}
		out, stderr, code = heraldRun(t, nil, "who", g, src[0], src[1], "--json")
		if code != 0 || !strings.Contains(out, `"changes_last_hour_at_least":true`) || !strings.Contains(out, fmt.Sprintf(`"changes_last_hour":%d,`, n)) {
			t.Errorf("who %v --json with every event dropped: exit %d, want changes_last_hour %d, at least:\n%s%s", src, code, n, out, stderr)
		}
	}
}

// gainSeen reports whether who, reading src, gives worker-1's gain of g
// as seen (a since that is no bound).
func gainSeen(t *testing.T, g string, src []string) bool {
	t.Helper()
	out, stderr, code := heraldRun(t, nil, "who", g, src[0], src[1], "--json")
	if code != 0 || !strings.Contains(out, `"id":"worker-1"`) {
		t.Fatalf("who %v --json: exit %d, want worker-1:\n%s%s", src, code, out, stderr)
	}
	return !strings.Contains(out, `"since_at_most":true`)
}
