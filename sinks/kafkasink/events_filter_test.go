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
	w := &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Topic: cfg.EventsTopic, Balancer: cfg.Partitioner.balancer(), RequiredAcks: kafka.RequireAll}
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

// Keys passes over the records whose key it refuses before they are
// decoded, and OnSkipped gets each record that is no herald event instead
// of the log; Keys(nil) and OnSkipped(nil) are refused.
func TestEventsKeysAndOnSkipped(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := testConfig(t, c)
	s := connected(t, cfg)
	evs := sinktest.Events("keys", 3, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Write(ctx, evs); err != nil {
		t.Fatal(err)
	}
	w := &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Topic: cfg.EventsTopic, Balancer: cfg.Partitioner.balancer(), RequiredAcks: kafka.RequireAll}
	defer w.Close()
	bad := []kafka.Message{{Key: []byte(evs[0].Group), Value: []byte("garbage")}, {Key: []byte(evs[1].Group), Value: []byte("garbage")}}
	if err := w.WriteMessages(ctx, bad...); err != nil {
		t.Fatal(err)
	}
	var asked []string
	var skipped []string
	st, err := Events(ctx, cfg, "", Unfiltered(),
		Keys(func(k string) bool { asked = append(asked, k); return k == evs[0].Group }),
		OnSkipped(func(m kafka.Message, err error) { skipped = append(skipped, string(m.Key)) }))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var got []string
	for done := false; !done; {
		select {
		case e := <-st.C():
			got = append(got, e.Group)
		case <-st.Synced():
			done = true
		case <-ctx.Done():
			t.Fatal("not synced")
		}
	}
	if len(got) != 2 || got[0] != evs[0].Group || got[1] != evs[0].Group {
		t.Errorf("delivered events of %v; want %s's two only", got, evs[0].Group)
	}
	if len(skipped) != 1 || skipped[0] != evs[0].Group || st.Skipped() != 1 {
		t.Errorf("skipped %v (%d); want only the garbage keyed %s, the other's key refused before decoding", skipped, st.Skipped(), evs[0].Group)
	}
	if len(asked) != len(evs)+len(bad) {
		t.Errorf("Keys asked of %d records, want every one of %d", len(asked), len(evs)+len(bad))
	}
	if _, err := Events(ctx, cfg, "", Keys(nil)); err == nil {
		t.Error("Keys(nil) accepted")
	}
	if _, err := Events(ctx, cfg, "", OnSkipped(nil)); err == nil {
		t.Error("OnSkipped(nil) accepted")
	}
}
