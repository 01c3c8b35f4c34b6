package kafkasink

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/sinktest"
)

// TestEventsOfAnotherGroupUnderTheKeyAreSkipped: a record keyed /q whose
// value is an event of /a is not /q's event: Events for /q skips it and
// delivers /q's own.
func TestEventsOfAnotherGroupUnderTheKeyAreSkipped(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := testConfig(t, c)
	s := connected(t, cfg)
	a := sinktest.Events("filter-a", 1, 1)[0]
	q := sinktest.Events("filter-q", 1, 1)[0]
	m, err := eventMessage(cfg.EventsTopic, a)
	if err != nil {
		t.Fatal(err)
	}
	m.Topic, m.Key = "", []byte(q.Group)
	w := &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Topic: cfg.EventsTopic, Balancer: cfg.Partitioner.balancer()}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []publish.Event{q}); err != nil {
		t.Fatal(err)
	}
	st, err := Events(ctx, cfg, q.Group)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	select {
	case e := <-st.C():
		if e.ID != q.ID {
			t.Fatalf("a reader of %s got %s of group %s; want only %s's own event %s", q.Group, e.ID, e.Group, q.Group, q.ID)
		}
	case <-ctx.Done():
		t.Fatal("no event")
	}
}
