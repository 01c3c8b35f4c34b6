package main

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// TestHistoryFromKafkaInPassesMarksAGroupOfATopicMadeAgainBetweenThem:
// the events topic deleted and made again between the passes (its
// offsets begin at 0 again), the late group's first record, at offset 2
// in the first pass, lies at offset 0 in the second: a record found
// below where the first pass found the group's first one was taken as
// nothing lost, and bravo's tenure was missing without a mark before
// charlie's.
func TestHistoryFromKafkaInPassesMarksAGroupOfATopicMadeAgainBetweenThem(t *testing.T) {
	_, late, brokers, cl := kafkaGroups(t, false)
	mkL := storyOf(late, time.Now().UTC().Add(-time.Minute))
	c := participant("charlie", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
	defer cancel()
	ts, batches, errs := historyInBatches(ctx, t, &sourceFlags{kafka: brokers}, nil, 2, &historyBatchTold, func(batch int) {
		if batch == 1 {
			remakeTopic(ctx, t, cl, brokers, mkL(publish.LeaderElected, c, nil, 30, 30, false))
		}
	})
	if batches != 2 {
		t.Fatalf("history told %d batches, want 2 (one for each group)", batches)
	}
	checkOwnerGap(t, ts, late, "charlie", true, errs)
}

// remakeTopic deletes the events topic and makes it again with evs.
func remakeTopic(ctx context.Context, t *testing.T, cl *kgo.Client, brokers []string, evs ...publish.Event) {
	t.Helper()
	req := kmsg.NewPtrDeleteTopicsRequest()
	rt := kmsg.NewDeleteTopicsRequestTopic()
	topic := kafkasink.DefaultEventsTopic
	rt.Topic = &topic
	req.Topics = append(req.Topics, rt)
	req.TopicNames = []string{topic}
	res, err := req.RequestWith(ctx, cl)
	if err != nil || len(res.Topics) != 1 || res.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete topic %s: %v %+v", topic, err, res)
	}
	ks, err := kafkasink.New(kafkasink.Config{Brokers: brokers, Partitions: 1, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ks.Close()
	write(t, ks, evs...)
}
