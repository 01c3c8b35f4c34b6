package kafkasink

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/sinktest"
)

// deleteTopic deletes topic, as an operator would.
func deleteTopic(t *testing.T, c *kafkatest.Cluster, topic string) {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(c.Addrs()...), Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cl.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Errors[topic]; err != nil {
		t.Fatalf("delete %s: %v", topic, err)
	}
}

// TestEventsEndWhenTheTopicIsMadeAgain: a reader of the events topic (as
// tail --kafka reads) whose topic is deleted and made again by the sink's
// next write must not wait quietly for the new topic to grow past the
// offset it had read to, skipping what the new topic holds before it: it
// ends, saying the topic was made again and events may be missing.
func TestEventsEndWhenTheTopicIsMadeAgain(t *testing.T) {
	r := startReading(t, "again", 3, 4, 60*time.Second)
	c, cfg, s, evs, st, ctx := r.c, r.cfg, r.s, r.evs, r.st, r.ctx
	deleteTopic(t, c, cfg.EventsTopic)
	writeAgain(t, s, evs[3:]) // the sink makes the topic again: one event at offset 0
	wait, cancelWait := context.WithTimeout(ctx, 20*time.Second)
	defer cancelWait()
	for {
		select {
		case e, ok := <-st.C():
			if !ok {
				if !errors.Is(st.Err(), ErrTopicMadeAgain) {
					t.Fatalf("the reader ended with %v; want ErrTopicMadeAgain", st.Err())
				}
				return
			}
			t.Logf("delivered %s after the topic was made again", e.ID)
		case <-wait.Done():
			t.Fatal("the reader still waits 20s after its topic was deleted and made again")
		}
	}
}

// TestOwnersFollowedAcrossATopicMadeAgain: a follower of the owners topic
// (who --kafka --follow, the live page) whose topic is deleted and made
// again reads the new topic from its start: the owner written there is
// delivered, though it sits below the offset the follower had read to.
func TestOwnersFollowedAcrossATopicMadeAgain(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := testConfig(t, c)
	s := connected(t, cfg)
	evs := sinktest.Events("owners-again", 1, 5)
	for _, e := range evs[:4] { // one owners record each: the new topic ends below them
		if err := s.Write(context.Background(), []publish.Event{e}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := FollowOwners(ctx, cfg, evs[0].Group)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if ups := untilSynced(t, ctx, st); len(ups) == 0 {
		t.Fatal("the follower delivered no owner of the topic before it was deleted")
	}
	deleteTopic(t, c, cfg.OwnersTopic)
	writeAgain(t, s, evs[4:]) // the new topic holds this owner alone, at offset 0
	wait, cancelWait := context.WithTimeout(ctx, 20*time.Second)
	defer cancelWait()
	want := evs[4].Owner.ID
	for {
		select {
		case u, ok := <-st.C():
			if !ok {
				t.Fatalf("the follower ended: %v", st.Err())
			}
			if o := u.Owner(); o != nil && o.ID == want {
				return
			}
		case <-wait.Done():
			t.Fatalf("the follower did not deliver %s, written to the owners topic made again, within 20s", want)
		}
	}
}
