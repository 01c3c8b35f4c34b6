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
	r := startReading(t, "deaf", 2, 4, 90*time.Second)
	c, s, evs, st, ctx := r.c, r.s, r.evs, r.st, r.ctx
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

// reading is a broker, a sink on it, the events of one group of which the
// first were written, and an Events reader that has read those.
type reading struct {
	c   *kafkatest.Cluster
	cfg Config
	s   *Sink
	evs []publish.Event
	st  *Stream[publish.Event]
	ctx context.Context
}

// startReading writes the first k of n events of a group prefix names
// and reads them with Events, within d for the whole test.
func startReading(t *testing.T, prefix string, k, n int, d time.Duration) reading {
	t.Helper()
	r := reading{c: kafkatest.Start(t)}
	r.cfg = testConfig(t, r.c)
	r.s = connected(t, r.cfg)
	r.evs = sinktest.Events(prefix, 1, n)
	if err := r.s.Write(context.Background(), r.evs[:k]); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	st, err := Events(ctx, r.cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if got := collect(ctx, st, k); len(got) != k {
		t.Fatalf("the %d events written first: read %d", k, len(got))
	}
	r.st, r.ctx = st, ctx
	return r
}
