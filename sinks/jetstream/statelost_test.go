package jetstream_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	hjs "github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/sinktest"
)

// TestStateLostWhenTheBucketIsMadeAgain: the owners bucket the first
// Connect makes is no loss; one deleted while the sink runs, made again by
// the Connect after the failed write, is, once (publish.StateKeeper), and
// a reconnect that finds the bucket still there is not.
func TestStateLostWhenTheBucketIsMadeAgain(t *testing.T) {
	srv := natsserver.Start(t)
	s := connectSink(t, hjs.Config{Conn: fast(srv.URL())})
	if s.StateLost() {
		t.Fatal("StateLost after the first Connect made the bucket: nothing was in it yet")
	}
	evs := sinktest.Events(t.Name(), 1, 3)
	write(t, s, evs[0])
	reconnect := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Connect(ctx); err != nil {
			t.Fatalf("Connect: %v", err)
		}
	}
	reconnect()
	if s.StateLost() {
		t.Fatal("StateLost after a Connect that found the bucket in place")
	}

	js := client(t, srv.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := js.DeleteKeyValue(ctx, hjs.DefaultBucket); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := s.Write(wctx, evs[1:2])
	wcancel()
	if !errors.Is(err, publish.ErrReconnect) {
		t.Fatalf("write with the bucket deleted: %v; want it to ask for a reconnect", err)
	}
	reconnect()
	if !s.StateLost() {
		t.Fatal("StateLost is false after Connect made the deleted owners bucket again")
	}
	if s.StateLost() {
		t.Fatal("StateLost said the same loss twice")
	}
	write(t, s, evs[1:]...)
}
