package kafkasink

import (
	"context"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/sinktest"
)

// TestFollowersReadOnAfterAnOutage: a follower (Events, as tail --kafka
// reads) goes on delivering after the brokers were down for longer than
// kafka-go's own retries last: the reader's failure is an outage to wait
// out, not the end of the stream.
func TestFollowersReadOnAfterAnOutage(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := testConfig(t, c)
	s := connected(t, cfg)
	evs := sinktest.Events("deaf", 1, 4)
	if err := s.Write(context.Background(), evs[:2]); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	st, err := Events(ctx, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := collect(ctx, st, 2); len(got) != 2 {
		t.Fatalf("before the outage: %d events, want 2", len(got))
	}
	c.Stop()
	time.Sleep(6 * time.Second) // past kafka-go's own retries
	c.Restart(t)
	writeAgain(t, s, evs[2:])
	wait, cancelWait := context.WithTimeout(ctx, 30*time.Second)
	defer cancelWait()
	if got := collect(wait, st, 2); len(got) != 2 {
		t.Fatalf("after a 6s outage the follower delivered %d of the 2 events written since (err %v): it went deaf", len(got), st.Err())
	}
}

// writeAgain writes evs, connecting again as the pipeline would until the
// brokers take them.
func writeAgain(t *testing.T, s *Sink, evs []publish.Event) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := s.Write(ctx, evs)
		if err != nil {
			_ = s.Connect(ctx)
		}
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("could not write after the brokers came back: %v", err)
		}
		time.Sleep(200 * time.Millisecond) // between attempts
	}
}
