package kafkasink

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/sinktest"
)

// TestStateLostWhenTheOwnersTopicIsMadeAgain: the owners topic the first
// Connect makes is no loss; one deleted while the sink runs, made again by
// the Connect after the failed write, is, once (publish.StateKeeper), and
// a reconnect that finds the topic still there is not.
func TestStateLostWhenTheOwnersTopicIsMadeAgain(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := testConfig(t, c)
	s := connected(t, cfg)
	if s.StateLost() {
		t.Fatal("StateLost after the first Connect made the topics: nothing was in them yet")
	}
	evs := sinktest.Events(t.Name(), 1, 3)
	write := func(evs ...publish.Event) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return s.Write(ctx, evs)
	}
	reconnect := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Connect(ctx); err != nil {
			t.Fatalf("Connect: %v", err)
		}
	}
	if err := write(evs[0]); err != nil {
		t.Fatal(err)
	}
	reconnect()
	if s.StateLost() {
		t.Fatal("StateLost after a Connect that found the owners topic in place")
	}

	deleteTopic(t, c, cfg.OwnersTopic)
	if err := write(evs[1]); !errors.Is(err, publish.ErrReconnect) {
		t.Fatalf("write with the owners topic deleted: %v; want it to ask for a reconnect", err)
	}
	reconnect()
	if !s.StateLost() {
		t.Fatal("StateLost is false after Connect made the deleted owners topic again")
	}
	if s.StateLost() {
		t.Fatal("StateLost said the same loss twice")
	}
	if err := write(evs[1:]...); err != nil {
		t.Fatal(err)
	}
}
