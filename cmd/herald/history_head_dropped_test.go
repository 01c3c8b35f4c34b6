package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/kafkasink"
	"github.com/zkherald/herald/sinks/natssink"
)

// TestHistoryWhoseOlderEventsWereDroppedSaysSo: worker-1 led g and
// resigned, worker-2 was elected after it, and then retention dropped the
// older events (the stream's --nats-max-age or max messages, the topic's
// retention.ms: the oldest go first), leaving worker-2's election the
// group's first stored event. history told worker-2 as the group's first
// owner, its start seen, GAP no: worker-1's tenure was gone without a
// mark. A group's first stored event that is a change rather than a
// bridge's first look at the group follows events that were dropped, and
// its tenure is GAP maybe.
func TestHistoryWhoseOlderEventsWereDroppedSaysSo(t *testing.T) {
	url := natsserver.Start(t).URL()
	brokers := kafkatest.Start(t).Addrs()
	kafka := strings.Join(brokers, ",")
	g := electedAfterAResign(t, url, kafka, "head-1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dropStreamBefore(ctx, t, url, "worker-2", "")
	dropTopicBefore(ctx, t, brokers, "worker-2")
	for _, src := range [][]string{{"--nats", url}, {"--kafka", kafka}} {
		ts := historyJSON(t, g, src[0], src[1])
		if len(ts) == 0 || ts[0].Owner.ID != "worker-2" {
			t.Fatalf("history %v after the older events were dropped: %+v, want worker-2 first", src, ts)
		}
		if !ts[0].Gap {
			t.Errorf("history %v: worker-2's tenure, whose group's older events were dropped, is not marked GAP maybe: %+v", src, ts[0])
		}
		out, _, _ := heraldRun(t, nil, "history", g, src[0], src[1])
		if !strings.Contains(out, "maybe") {
			t.Errorf("history %v table says no gap:\n%s", src, out)
		}
	}
}

// electedAfterAResign makes a group where worker-1 led and resigned, and
// worker-2 was elected after the bridge (source, writing to NATS at url
// and, unless "", to Kafka) saw the group without an owner: worker-2's
// gain follows nobody. It returns the group.
func electedAfterAResign(t *testing.T, url, kafka, source string) string {
	t.Helper()
	zk := zkFlags(t)
	g := uniq(t)
	madeEmpty(t, g)
	args := []string{"bridge", "--watch", g, "--nats", url, "--heartbeat", "200ms", "--source", source}
	if kafka != "" {
		args = append(args, "--kafka", kafka)
	}
	b := start(t, nil, append(args, zk...)...)
	if err := waitFor(30*time.Second, func() bool { return ownerlessConfirmed(t, g, url, source) }); err != nil {
		t.Fatalf("the bridge never published %s without an owner:\n%s", g, b.out)
	}
	s := zkSession(t)
	h := campaign(t, s, g, "worker-1")
	waitHistory(t, g, url, kafka, "worker-1", b)
	if err := h.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Seen ended first: worker-2's election then follows nobody. Seen in
	// one look, worker-2's gain would name worker-1 before it, which marks
	// the gap whatever was dropped.
	waitHistory(t, g, url, kafka, "resigned", b)
	campaign(t, s, g, "worker-2")
	waitHistory(t, g, url, kafka, "worker-2", b)
	return g
}

// TestHistoryWhoseGroupsOlderEventsWerePurgedSaysSo: an operator purged
// the group's older messages from the stream (nats stream purge --subject
// --seq), while another group's events stay first in it: the stream's
// first sequence is still 1, but it holds deleted messages, and worker-2's
// tenure, the first stored, is GAP maybe.
func TestHistoryWhoseGroupsOlderEventsWerePurgedSaysSo(t *testing.T) {
	url, sink := jetStreamSink(t)
	write(t, sink, story(uniq(t)+"-other")...) // the stream's first messages
	g := electedAfterAResign(t, url, "", "purge-1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dropStreamBefore(ctx, t, url, "worker-2", g)
	ts := historyJSON(t, g, "--nats", url)
	if len(ts) == 0 || ts[0].Owner.ID != "worker-2" {
		t.Fatalf("history after the group's older events were purged: %+v, want worker-2 first", ts)
	}
	if !ts[0].Gap {
		t.Errorf("worker-2's tenure, whose group's older events were purged, is not marked GAP maybe: %+v", ts[0])
	}
}

// waitHistory waits until history from NATS and from Kafka shows what
// (an owner's id) holding g, or ("resigned") no owner holding.
func waitHistory(t *testing.T, g, url, kafka, what string, b *proc) {
	t.Helper()
	for _, src := range [][]string{{"--nats", url}, {"--kafka", kafka}} {
		if src[1] == "" {
			continue
		}
		var out string
		if err := waitFor(30*time.Second, func() bool {
			out, _, _ = heraldRun(t, nil, "history", g, src[0], src[1])
			return strings.Contains(out, what) && strings.Contains(out, "holding") == (what != "resigned")
		}); err != nil {
			t.Fatalf("history %v never showed %s:\n%s\nbridge:\n%s", src, what, out, b.out)
		}
	}
}

// isGainOf reports whether e, decoded without error, is id's gain.
func isGainOf(e publish.Event, err error, id string) bool {
	return err == nil && e.Type.Gains() && e.Owner != nil && e.Owner.ID == id
}

// dropStreamBefore purges the HERALD stream's messages before id's gain,
// as its limits drop the oldest; only group g's, unless "".
func dropStreamBefore(ctx context.Context, t *testing.T, url, id, g string) {
	t.Helper()
	st, err := natsserver.JetStream(t, url).Stream(ctx, jetstream.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		e, err := natssink.Decode(&nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data})
		if isGainOf(e, err, id) {
			opts := []js.StreamPurgeOpt{js.WithPurgeSequence(seq)}
			if g != "" {
				opts = append(opts, js.WithPurgeSubject("herald.*."+publish.MustTokens(g)))
			}
			if err := st.Purge(ctx, opts...); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no gain of %s in the stream", id)
}

// dropTopicBefore deletes the events topic's records before id's gain, as
// its retention drops the oldest.
func dropTopicBefore(ctx context.Context, t *testing.T, brokers []string, id string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(kafkasink.DefaultEventsTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for ctx.Err() == nil {
		for _, r := range cl.PollFetches(ctx).Records() {
			look := func(k string) (string, bool) {
				for _, h := range r.Headers {
					if h.Key == k {
						return string(h.Value), true
					}
				}
				return "", false
			}
			if e, err := publish.Decode(publish.KafkaPrefix, look, r.Value); isGainOf(e, err, id) {
				deleteRecords(ctx, t, cl, r.Partition, r.Offset)
				return
			}
		}
	}
	t.Fatalf("no gain of %s in the events topic", id)
}

// deleteRecords deletes the events topic's records of partition p below offset.
func deleteRecords(ctx context.Context, t *testing.T, cl *kgo.Client, p int32, offset int64) {
	t.Helper()
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = kafkasink.DefaultEventsTopic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = p, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	res, err := req.RequestWith(ctx, cl)
	if err != nil || len(res.Topics) != 1 || res.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("delete records of %s/%d below %d: %v %+v", rt.Topic, p, offset, err, res)
	}
}

// TestHistoryOfAnAuditLogWhoseOldestFilesWereRemovedSaysSo: the rotated
// file holding the bridge's first look at g and alpha's tenure was
// removed (retention), leaving bravo's election, which follows nobody,
// the group's first stored event. history told bravo as g's first owner,
// GAP no; it is GAP maybe now, and while that file is there it is not.
func TestHistoryOfAnAuditLogWhoseOldestFilesWereRemovedSaysSo(t *testing.T) {
	g, path, mk := newStory(t)
	a, b := participant("alpha", 1), participant("bravo", 2)
	files := [][]publish.Event{
		{mk(publish.LeaderLost, nil, nil, 0, 5, true), mk(publish.LeaderElected, a, nil, 10, 10, false), mk(publish.LeaderLost, nil, a, 10, 15, false)},
		{mk(publish.LeaderElected, b, nil, 20, 20, false)},
		{mk(publish.LeaderReady, b, nil, 20, 21, false)},
	}
	for i, evs := range files {
		as, err := audit.New(path)
		if err != nil {
			t.Fatal(err)
		}
		write(t, as, evs...)
		if err := as.Close(); err != nil {
			t.Fatal(err)
		}
		if i < len(files)-1 {
			if err := os.Rename(path, fmt.Sprintf("%s.%06d", path, i+1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	bravo := func() audit.Tenure {
		for _, r := range historyJSON(t, g, "--audit", path) {
			if r.Owner.ID == "bravo" {
				return r
			}
		}
		t.Fatalf("history of %s shows no bravo", path)
		return audit.Tenure{}
	}
	if r := bravo(); r.Gap {
		t.Errorf("bravo, following alpha's seen end with every file there, is GAP maybe: %+v", r)
	}
	if err := os.Remove(path + ".000001"); err != nil {
		t.Fatal(err)
	}
	if r := bravo(); !r.Gap {
		t.Errorf("bravo, first stored after the oldest file was removed, is not GAP maybe: %+v", r)
	}
	if _, stderr, _ := heraldRun(t, nil, "history", g, "--audit", path); !strings.Contains(stderr, "oldest rotated files were removed") {
		t.Errorf("history says nothing of the removed file:\n%s", stderr)
	}
}

// TestHistoryOfAnAuditLogWhoseRotatedFilesWereAllArchivedSaysSo: the
// sink rotated its log itself, and every rotated file was then moved away
// (shipped to an archive, the usual fate of numbered files): the log at
// the path began with bravo's election, after alpha's seen end. With no
// rotated file left, history read the log as holding every event, bravo
// as the group's first owner, GAP -; and the sink's next rotation numbered
// its file 1 again (a name the archive already holds), so the log read as
// whole from then on too.
func TestHistoryOfAnAuditLogWhoseRotatedFilesWereAllArchivedSaysSo(t *testing.T) {
	g, path, mk := newStory(t)
	a, b := participant("alpha", 1), participant("bravo", 2)
	as := rotatingSink(t, path)
	write(t, as, mk(publish.LeaderLost, nil, nil, 0, 5, true), mk(publish.LeaderElected, a, nil, 10, 10, false), mk(publish.LeaderLost, nil, a, 10, 15, false))
	write(t, as, mk(publish.LeaderElected, b, nil, 20, 20, false))
	archive := func(name string) {
		t.Helper()
		if err := os.Rename(name, filepath.Join(t.TempDir(), filepath.Base(name))); err != nil {
			t.Fatal(err)
		}
	}
	archive(path + ".000001")
	bravo := func(when string) {
		t.Helper()
		for _, r := range historyJSON(t, g, "--audit", path) {
			if r.Owner.ID == "bravo" && !r.Gap {
				t.Errorf("%s, bravo, first stored after every rotated file was archived, is not GAP maybe: %+v", when, r)
			}
		}
	}
	bravo("before the next rotation")
	write(t, as, mk(publish.LeaderReady, b, nil, 20, 21, false))
	if _, err := os.Stat(path + ".000001"); err == nil {
		t.Errorf("the sink's next rotation reused %s.000001, the name of the file archived", path)
	}
	bravo("after the next rotation")
}

// TestHistoryFromAStreamWithAGroupsMessagesDeletedInsideMarksTheNext:
// charlie's election and release were removed from the stream by hand
// (nats stream rmm), between alpha's release and bravo's election. The
// group's first message stayed first, so only the warning said anything:
// bravo read as following alpha's seen end, GAP -, charlie gone without a
// mark. A group's event read after a deleted message since its event
// before now says gap.
func TestHistoryFromAStreamWithAGroupsMessagesDeletedInsideMarksTheNext(t *testing.T) {
	url, sink := jetStreamSink(t)
	g := uniq(t)
	now := time.Now().UTC().Add(-time.Minute)
	a := participant("alpha", 1)
	c := participant("charlie", 2)
	b := participant("bravo", 3)
	mk := storyOf(g, now)
	for _, e := range []publish.Event{
		mk(publish.LeaderLost, nil, nil, 0, 5, true), mk(publish.LeaderElected, a, nil, 10, 10, false), mk(publish.LeaderLost, nil, a, 10, 15, false),
		mk(publish.LeaderElected, c, nil, 20, 20, false), mk(publish.LeaderLost, nil, c, 20, 25, false),
		mk(publish.LeaderElected, b, nil, 30, 30, false),
	} {
		write(t, sink, e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := natsserver.JetStream(t, url).Stream(ctx, jetstream.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		e, err := natssink.Decode(&nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data})
		if err == nil && ((e.Owner != nil && e.Owner.ID == "charlie") || (e.Previous != nil && e.Previous.ID == "charlie")) {
			if err := st.DeleteMsg(ctx, seq); err != nil {
				t.Fatal(err)
			}
			deleted++
		}
	}
	if deleted != 2 {
		t.Fatalf("deleted %d of charlie's messages, want 2", deleted)
	}
	for _, args := range [][]string{{g, "--nats", url}, {"--nats", url}} {
		found := false
		for _, r := range historyJSON(t, args...) {
			if r.Group != g || r.Owner.ID != "bravo" {
				continue
			}
			found = true
			if !r.Gap {
				t.Errorf("history %v: bravo, after charlie's messages were deleted, is not GAP maybe: %+v", args, r)
			}
		}
		if !found {
			t.Errorf("history %v shows no bravo", args)
		}
	}
}

// TestHistoryFromAnEventsTopicThatCompactsSaysSo: the events topic was
// made to compact (cleanup.policy=compact), which keeps each group's
// latest record and drops the ones before it, while the partition still
// starts at offset 0. The group's only record left, bravo's election
// after alpha resigned, read as its first owner, following nobody, GAP -.
func TestHistoryFromAnEventsTopicThatCompactsSaysSo(t *testing.T) {
	kc := kafkatest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(kc.Addrs()...)}
	res, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: kafkasink.DefaultEventsTopic, NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"}},
	}}})
	if err != nil || res.Errors[kafkasink.DefaultEventsTopic] != nil {
		t.Fatalf("create the events topic: %v %v", err, res.Errors)
	}
	ks, err := kafkasink.New(kafkasink.Config{Brokers: kc.Addrs(), Partitions: 1, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ks.Close() })
	g := uniq(t)
	b := participant("bravo", 2)
	write(t, ks, publish.Event{Type: publish.LeaderElected, Group: g, Recipe: elect.RecipeElection, Owner: b,
		Term: 20, Zxid: 20, Time: time.Now().UTC().Add(-time.Minute), Source: "test"}.WithID())
	brokers := strings.Join(kc.Addrs(), ",")
	ts := historyJSON(t, g, "--kafka", brokers)
	if len(ts) != 1 || ts[0].Owner.ID != "bravo" || !ts[0].Gap {
		t.Errorf("history from an events topic that compacts: %+v, want bravo alone, GAP maybe", ts)
	}
	if _, stderr, _ := heraldRun(t, nil, "history", g, "--kafka", brokers); !strings.Contains(stderr, "compact") {
		t.Errorf("history says nothing of the topic compacting:\n%s", stderr)
	}
}

// TestHistoryFromAnEventsTopicAReaderCannotDescribeSaysSo: the reader is
// allowed to read herald's topics (an ACL granting Read) but not to
// describe their configs, so history could not tell whether the events
// topic compacts, which drops a group's older records with the partition
// still starting at offset 0. It said so at debug level only, and showed
// the history as whole; it warns now, naming the grant that lets it check.
func TestHistoryFromAnEventsTopicAReaderCannotDescribeSaysSo(t *testing.T) {
	kc := kafkatest.Start(t, kafkatest.SASL(kafkatest.Plain, "admin", "admin-secret"),
		kafkatest.LimitedUser(kafkatest.Plain, "reader", "reader-secret", kfake.ACL{
			Resource: kmsg.ACLResourceTypeTopic, Name: "herald.", Pattern: kmsg.ACLResourcePatternTypePrefixed,
			Operation: kmsg.ACLOperationRead, Allow: true,
		}))
	ks, err := kafkasink.New(kafkasink.Config{Brokers: kc.Addrs(), Partitions: 1, ReplicationFactor: 1,
		SASL: &kafkasink.SASL{Mechanism: kafkasink.Plain, User: "admin", Password: "admin-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ks.Close() })
	g := uniq(t)
	b := participant("bravo", 2)
	write(t, ks, publish.Event{Type: publish.LeaderElected, Group: g, Recipe: elect.RecipeElection, Owner: b,
		Term: 20, Zxid: 20, Time: time.Now().UTC().Add(-time.Minute), Source: "test"}.WithID())
	reader := []string{"--kafka", strings.Join(kc.Addrs(), ","), "--kafka-sasl", "PLAIN", "--kafka-user", "reader"}
	out, stderr, code := heraldRun(t, []string{"HERALD_KAFKA_PASSWORD=reader-secret"}, append([]string{"history", g}, reader...)...)
	if code != 0 || !strings.Contains(out, "bravo") {
		t.Fatalf("history read with Read only: exit %d, want bravo:\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"could not check whether the topic " + kafkasink.DefaultEventsTopic + " compacts", "--operation DescribeConfigs", "User:reader"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("history by a reader not allowed to describe the topic's configs does not say %q:\n%s", want, stderr)
		}
	}
}

// TestHistoryOfAnAuditLogWhoseRotatedFilesWereCleanedUpWithTheRecordSaysSo:
// as TestHistoryOfAnAuditLogWhoseRotatedFilesWereAllArchivedSaysSo, but
// the cleanup took every file named audit.log.* (find -name 'audit.log.*'
// -delete, logrotate's maxage over that pattern): the rotated files and
// audit.log.rotated, the record of the last rotation, with them. The log
// read as whole again, bravo as the group's first owner, GAP -, and the
// next rotation reused the name .000001. The record is kept where such a
// cleanup does not reach now, a dot file beside the log.
func TestHistoryOfAnAuditLogWhoseRotatedFilesWereCleanedUpWithTheRecordSaysSo(t *testing.T) {
	g, path, mk := newStory(t)
	a, b := participant("alpha", 1), participant("bravo", 2)
	as := rotatingSink(t, path)
	write(t, as, mk(publish.LeaderLost, nil, nil, 0, 5, true), mk(publish.LeaderElected, a, nil, 10, 10, false), mk(publish.LeaderLost, nil, a, 10, 15, false))
	write(t, as, mk(publish.LeaderElected, b, nil, 20, 20, false))
	cleanup := func() {
		t.Helper()
		names, err := filepath.Glob(path + ".*")
		if err != nil || len(names) == 0 {
			t.Fatalf("nothing named %s.* to clean up: %v", path, err)
		}
		for _, n := range names {
			if err := os.Remove(n); err != nil {
				t.Fatal(err)
			}
		}
	}
	cleanup()
	bravo := func(when string) {
		t.Helper()
		found := false
		for _, r := range historyJSON(t, g, "--audit", path) {
			if r.Owner.ID == "bravo" {
				found = true
				if !r.Gap {
					t.Errorf("%s, bravo, first stored after the cleanup, is not GAP maybe: %+v", when, r)
				}
			}
		}
		if !found {
			t.Errorf("%s, history shows no bravo", when)
		}
	}
	bravo("before the next rotation")
	write(t, as, mk(publish.LeaderReady, b, nil, 20, 21, false))
	if _, err := os.Stat(path + ".000001"); err == nil {
		t.Errorf("the sink's next rotation reused %s.000001, the name of a file cleaned up", path)
	}
	bravo("after the next rotation")
}

// TestHistoryFromACompactingTopicAReaderCannotDescribeMarksAGap: as
// TestHistoryFromAnEventsTopicThatCompactsSaysSo, the topic compacting,
// read by a reader not allowed to describe its configs. The group's
// only record left, bravo's election after alpha resigned, read as its
// first owner, following nobody, GAP - in the rows (--json carries no
// warning), the warning on standard error alone saying it might not be.
// Unable to tell, history marks it GAP maybe, as for a topic that
// compacts.
func TestHistoryFromACompactingTopicAReaderCannotDescribeMarksAGap(t *testing.T) {
	kc := kafkatest.Start(t, kafkatest.SASL(kafkatest.Plain, "admin", "admin-secret"),
		kafkatest.LimitedUser(kafkatest.Plain, "reader", "reader-secret", kfake.ACL{
			Resource: kmsg.ACLResourceTypeTopic, Name: "herald.", Pattern: kmsg.ACLResourcePatternTypePrefixed,
			Operation: kmsg.ACLOperationRead, Allow: true,
		}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(kc.Addrs()...), Transport: &kafka.Transport{SASL: plain.Mechanism{Username: "admin", Password: "admin-secret"}}}
	res, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: kafkasink.DefaultEventsTopic, NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"}},
	}}})
	if err != nil || res.Errors[kafkasink.DefaultEventsTopic] != nil {
		t.Fatalf("create the events topic: %v %v", err, res.Errors)
	}
	ks, err := kafkasink.New(kafkasink.Config{Brokers: kc.Addrs(), Partitions: 1, ReplicationFactor: 1,
		SASL: &kafkasink.SASL{Mechanism: kafkasink.Plain, User: "admin", Password: "admin-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ks.Close() })
	g := uniq(t)
	b := participant("bravo", 2)
	write(t, ks, publish.Event{Type: publish.LeaderElected, Group: g, Recipe: elect.RecipeElection, Owner: b,
		Term: 20, Zxid: 20, Time: time.Now().UTC().Add(-time.Minute), Source: "test"}.WithID())
	reader := []string{"--kafka", strings.Join(kc.Addrs(), ","), "--kafka-sasl", "PLAIN", "--kafka-user", "reader"}
	out, stderr, code := heraldRun(t, []string{"HERALD_KAFKA_PASSWORD=reader-secret"}, append([]string{"history", "--json", g}, reader...)...)
	var ts []audit.Tenure
	if err := json.Unmarshal([]byte(out), &ts); code != 0 || err != nil {
		t.Fatalf("history --json read with Read only: exit %d, %v:\n%s%s", code, err, out, stderr)
	}
	if len(ts) != 1 || ts[0].Owner.ID != "bravo" || !ts[0].Gap {
		t.Errorf("history by a reader that cannot tell whether the topic compacts: %+v, want bravo alone, GAP maybe", ts)
	}
}
