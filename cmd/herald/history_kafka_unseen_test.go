package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// TestHistoryFromKafkaOwnersKeepsAStartSeenLate: the owners topic records
// an owner seen late (the bridge stalled), marked herald_since_unseen, and
// every event of the group was dropped. who said since "or earlier" while
// history's row from the owners topic gave the start as seen (found by a
// review); both now say it is a bound.
func TestHistoryFromKafkaOwnersKeepsAStartSeenLate(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	brokers := kafkatest.Start(t, kafkatest.Topic(kafkasink.DefaultEventsTopic, 1), kafkatest.Topic(kafkasink.DefaultOwnersTopic, 1)).Addrs()
	g := uniq(t)
	nb := time.Now().Add(-10 * time.Minute).UTC()
	e := publish.Event{Type: publish.LeaderElected, Group: g, Recipe: elect.RecipeElection,
		Owner: &publish.Participant{ID: "worker-1", Node: "n_0000000001", Session: "0x1"},
		Term:  5, Zxid: 5, Time: time.Now().Add(-time.Minute).UTC(), Source: "b1", NotBefore: &nb}.WithID()
	hs, body, err := publish.Encode(e, publish.KafkaPrefix)
	if err != nil {
		t.Fatal(err)
	}
	var kh []kgo.RecordHeader
	for _, h := range hs {
		kh = append(kh, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
	}
	kh = append(kh, kgo.RecordHeader{Key: kafkasink.SinceUnseenHeader, Value: []byte("true")})
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// another group's event, so the events topic exists
	other := e
	other.Group = g + "-other"
	other.NotBefore = nil
	other = other.WithID()
	ohs, obody, _ := publish.Encode(other, publish.KafkaPrefix)
	var okh []kgo.RecordHeader
	for _, h := range ohs {
		okh = append(okh, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
	}
	if err := cl.ProduceSync(ctx,
		&kgo.Record{Topic: kafkasink.DefaultOwnersTopic, Key: []byte(g), Value: body, Headers: kh},
		&kgo.Record{Topic: kafkasink.DefaultEventsTopic, Key: []byte(other.Group), Value: obody, Headers: okh},
	).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kafka := strings.Join(brokers, ",")
	out, stderr, code := heraldRun(t, nil, "who", g, "--kafka", kafka, "--json")
	t.Logf("who: %d\n%s%s", code, out, stderr)
	out, stderr, code = heraldRun(t, nil, "history", g, "--kafka", kafka)
	t.Logf("history: %d\n%s%s", code, out, stderr)
	ts := historyJSON(t, g, "--kafka", kafka)
	if len(ts) != 1 {
		t.Fatalf("want one row: %+v", ts)
	}
	if ts[0].FromSeen {
		t.Errorf("history states the start as seen (FromSeen) from an owners record marked since_unseen (gain seen late, NotBefore %s): %+v", nb, ts[0])
	}
}
