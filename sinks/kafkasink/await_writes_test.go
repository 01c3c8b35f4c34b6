package kafkasink_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// TestDeposedWriteLandsBeforeTheSuccessors: bridge A's write of a
// release is slow (the broker holds its produce for 2 s) when A stops
// publishing, deposed. A handed its HA election over at once, so B's
// newer owner could land on the owners topic before A's release, which
// then read as the group's last state: no owner (a review reproduced it
// with a produce held past the client's timeout). A deposed bridge now
// waits for the writes under way (Pipeline.AwaitWrites) before it hands
// over, as the bridge's HA loop does; here the two pipelines stand for
// the two bridges, and AwaitWrites must return only once A's held write
// has landed.
func TestDeposedWriteLandsBeforeTheSuccessors(t *testing.T) {
	c := kafkatest.Start(t)
	var holdA atomic.Bool
	held := make(chan struct{}, 16)
	c.Kfake().ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.Kfake().KeepControl()
		if holdA.Load() { // only A writes until B starts, once holdA is off
			held <- struct{}{}
			c.Kfake().SleepControl(func() { time.Sleep(2 * time.Second) })
		}
		return nil, nil, false
	})
	sink := func(wt time.Duration) *kafkasink.Sink {
		s, err := kafkasink.New(kafkasink.Config{Brokers: c.Addrs(), EventsTopic: "ev", OwnersTopic: "own",
			Partitions: 1, ReplicationFactor: 1, WriteTimeout: wt, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	pa, err := publish.New([]publish.Sink{sink(8 * time.Second)}, publish.WithSource("A"))
	if err != nil {
		t.Fatal(err)
	}
	pb, err := publish.New([]publish.Sink{sink(3 * time.Second)}, publish.WithSource("B"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = pa.Run(ctx) }()
	go func() { _ = pb.Run(ctx) }()
	g := "/locks/x"
	o1 := &publish.Participant{ID: "p1", Node: "lock-0000000001"}
	o2 := &publish.Participant{ID: "p2", Node: "lock-0000000002"}
	now := time.Now()
	acquired := publish.Event{Type: publish.LockAcquired, Group: g, Recipe: "lock", Owner: o1, Term: 100, Zxid: 100, Time: now, Source: "A"}.WithID()
	if err := pa.Publish(ctx, acquired); err != nil {
		t.Fatal(err)
	}
	if err := waitDelivered(pa, 1); err != nil {
		t.Fatal(err)
	}
	holdA.Store(true)
	released := publish.Event{Type: publish.LockReleased, Group: g, Recipe: "lock", Previous: o1, Term: 100, Zxid: 200, Time: now, Source: "A"}.WithID()
	if err := pa.Publish(ctx, released); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held: // A's produce is held at the broker
	case <-time.After(10 * time.Second):
		t.Fatal("A's release was never produced")
	}
	pa.Pause()
	began := time.Now()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if !pa.AwaitWrites(wctx) {
		t.Fatal("A's write under way never ended")
	}
	waited := time.Since(began)
	holdA.Store(false)
	if waited < 1500*time.Millisecond || pa.Stats().Sinks["kafka"].Delivered != 2 {
		t.Fatalf("AwaitWrites returned %v after the pause, A's sink having delivered %d events: want it to wait for the write the broker held (2 s) to land, both events delivered",
			waited.Round(time.Millisecond), pa.Stats().Sinks["kafka"].Delivered)
	}
	releasedB := released
	releasedB.Source = "B"
	taken := publish.Event{Type: publish.LockAcquired, Group: g, Recipe: "lock", Owner: o2, Previous: o1, Term: 300, Zxid: 300, Time: now, Source: "B"}.WithID()
	if err := pb.Publish(ctx, releasedB, taken); err != nil {
		t.Fatal(err)
	}
	if err := waitDelivered(pb, 2); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // anything of A's still to land would have by now
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: c.Addrs(), Topic: "own", Partition: 0, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	defer rcancel()
	var last kafka.Message
	for n := 0; ; n++ {
		m, err := r.ReadMessage(rctx)
		if err != nil {
			if n == 0 {
				t.Fatalf("no record on the owners topic: %v", err)
			}
			break
		}
		last = m
	}
	if last.Value == nil {
		t.Fatalf("the owners topic's last record for %s is a tombstone (A's release, landed after B's newer owner): the group reads as without an owner", last.Key)
	}
}

// waitDelivered waits until p has delivered n events.
func waitDelivered(p *publish.Pipeline, n int64) error {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range p.Stats().Sinks {
			if int64(s.Delivered) >= n {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return context.DeadlineExceeded
}
