package kafkasink

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/sinktest"
)

func TestConformance(t *testing.T) {
	c := kafkatest.Start(t)
	sinktest.Run(t, sinktest.Harness{
		New: func(t *testing.T) publish.Sink {
			s, err := New(testConfig(t, c))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Read: func(t *testing.T, ctx context.Context, s publish.Sink, min int) []publish.Event {
			st, err := Events(ctx, s.(*Sink).Config(), "", Unfiltered())
			if err != nil {
				t.Fatalf("follow events: %v", err)
			}
			defer st.Close()
			return collect(ctx, st, min)
		},
	})
}

func TestWriteAfterFailedConnectFails(t *testing.T) {
	c := kafkatest.Start(t)
	s, err := New(testConfig(t, c))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Write(ctx, sinktest.Events("x", 1, 1)); err == nil {
		t.Fatal("Write before Connect succeeded")
	}
}

// An event larger than a Kafka message may be can never be stored: Write
// writes the events before it and says which one it refuses, so the
// pipeline drops it from this sink instead of retrying it forever.
func TestWriteRefusesAnEventTooLarge(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := testConfig(t, c)
	s := connected(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	evs := sinktest.Events("toolarge", 1, 3)
	big := evs[1]
	big.Source = strings.Repeat("s", maxMessageBytes)
	evs[1] = big.WithID()
	err := s.Write(ctx, evs)
	var rej *publish.RejectedError
	if !errors.As(err, &rej) || rej.Index != 1 || !strings.Contains(err.Error(), "message.max.bytes") || !strings.Contains(err.Error(), evs[1].ID) {
		t.Fatalf("Write = %v, want a RejectedError for event 1 naming it and the limit", err)
	}
	if errors.Is(err, publish.ErrReconnect) {
		t.Fatalf("a refused event must not ask for a reconnect: %v", err)
	}
	// The rest of the batch goes through on the next Write.
	if err := s.Write(ctx, evs[2:]); err != nil {
		t.Fatal(err)
	}
	st, err := Events(ctx, cfg, "", Unfiltered())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got := eventIDs(collect(ctx, st, 2))
	if want := []string{evs[0].ID, evs[2].ID}; !slices.Equal(got, want) {
		t.Fatalf("events topic holds %v, want %v (the refused event left out)", got, want)
	}
	owners, err := FollowOwners(ctx, cfg, "", Unfiltered())
	if err != nil {
		t.Fatal(err)
	}
	defer owners.Close()
	o := collect(ctx, owners, 2)
	if len(o) != 2 || o[1].Event.ID != evs[2].ID {
		t.Fatalf("owners topic: %+v, want the owners of events 0 and 2", o)
	}
}
