package natssink_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/natssink"
	"github.com/zkherald/herald/sinks/sinktest"
)

// subs maps each sink the harness made to the subscription that sees its
// subjects. NATS core keeps nothing, so the subscription must exist before
// the suite writes.
var subs sync.Map // publish.Sink -> *nats.Subscription

func TestConformance(t *testing.T) {
	sinktest.Run(t, sinktest.Harness{
		New: func(t *testing.T) publish.Sink {
			s, err := natssink.New(natssink.Options{URL: url})
			if err != nil {
				t.Fatal(err)
			}
			subs.Store(s, subscribe(t, url, "/"+t.Name()))
			return s
		},
		Read: func(t *testing.T, ctx context.Context, s publish.Sink, min int) []publish.Event {
			v, ok := subs.Load(s)
			if !ok {
				t.Fatalf("no subscription for sink %p", s)
			}
			return collect(t, ctx, v.(*nats.Subscription), min)
		},
	})
}

// subscribe listens to every herald subject below the group prefix.
func subscribe(t *testing.T, url, prefix string) *nats.Subscription {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("subscriber connect: %v", err)
	}
	t.Cleanup(nc.Close)
	sub, err := nc.SubscribeSync("herald.*." + publish.MustTokens(prefix) + ".>")
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if err := nc.Flush(); err != nil { // the server knows the interest before anyone publishes
		t.Fatalf("flush subscription: %v", err)
	}
	return sub
}

// collect decodes messages until it has min of them or ctx ends.
func collect(t *testing.T, ctx context.Context, sub *nats.Subscription, min int) []publish.Event {
	t.Helper()
	var out []publish.Event
	for len(out) < min {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			break
		}
		e, err := natssink.Decode(m)
		if err != nil {
			t.Fatalf("decode %s: %v", m.Subject, err)
		}
		out = append(out, e)
	}
	return out
}

func connected(t *testing.T, opts natssink.Options) *natssink.Sink {
	t.Helper()
	s, err := natssink.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestWriteFailsWhileServerDown: a Write during an outage returns an error
// (so the pipeline keeps the batch) and the same Write succeeds once the
// server is back, without calling Connect again.
func TestWriteFailsWhileServerDown(t *testing.T) {
	srv := natsserver.Start(t)
	s := connected(t, natssink.Options{URL: srv.URL(), ReconnectWait: 20 * time.Millisecond, MaxReconnectWait: 100 * time.Millisecond})
	evs := sinktest.Events(t.Name(), 1, 3)

	srv.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	err := s.Write(ctx, evs)
	cancel()
	if err == nil {
		t.Fatal("write succeeded with the server down")
	}
	if errors.Is(err, publish.ErrReconnect) {
		t.Fatalf("a reconnecting connection must not ask for Connect: %v", err)
	}

	srv.Restart(t)
	sub := subscribe(t, srv.URL(), "/"+t.Name())
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = s.Write(ctx, evs)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("write still failing 10s after restart: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // retry cadence of the pipeline, not ordering
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got := collect(t, ctx, sub, len(evs))
	if len(got) != len(evs) {
		t.Fatalf("subscriber got %d events, want %d", len(got), len(evs))
	}
	for i := range evs {
		if got[i].ID != evs[i].ID {
			t.Fatalf("event %d: id %s, want %s", i, got[i].ID, evs[i].ID)
		}
	}
}

func TestWriteBeforeConnectAsksForConnect(t *testing.T) {
	s, err := natssink.New(natssink.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Write(context.Background(), sinktest.Events(t.Name(), 1, 1))
	if !errors.Is(err, publish.ErrReconnect) {
		t.Fatalf("write before connect: %v, want ErrReconnect", err)
	}
}

func TestBadEventIsRejected(t *testing.T) {
	s := connected(t, natssink.Options{URL: url})
	e := sinktest.Events(t.Name(), 1, 1)[0]
	e.Group = "relative/path"
	err := s.Write(context.Background(), []publish.Event{e})
	if err == nil || !strings.Contains(err.Error(), "relative/path") {
		t.Fatalf("bad group: %v, want an error naming it", err)
	}
}

func natssinkOptions() natssink.Options { return natssink.Options{URL: url} }

// An event larger than the server's maximum payload can never be
// published: Write flushes the events before it and says which one it
// refuses, so the pipeline drops it from this sink instead of retrying it
// forever.
func TestWriteRefusesAnEventTooLarge(t *testing.T) {
	srv := natsserver.Start(t, natsserver.WithMaxPayload(2048))
	s, err := natssink.New(natssink.Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	evs := sinktest.Events(t.Name(), 1, 3)
	big := evs[1]
	big.Owner.ID = strings.Repeat("x", 256)
	big.Source = strings.Repeat("s", 2048)
	evs[1] = big.WithID()
	sub, err := s.Conn().SubscribeSync(">")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	err = s.Write(ctx, evs)
	var rej *publish.RejectedError
	if !errors.As(err, &rej) || rej.Index != 1 || !strings.Contains(err.Error(), "maximum payload") {
		t.Fatalf("Write = %v, want a RejectedError for event 1 naming the maximum payload", err)
	}
	m, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("the event before the refused one was not published: %v", err)
	}
	if got, err := natssink.Decode(m); err != nil || got.ID != evs[0].ID {
		t.Fatalf("got %v (%v), want event 0", got.ID, err)
	}
	// The rest of the batch goes through on the next Write.
	if err := s.Write(ctx, evs[2:]); err != nil {
		t.Fatal(err)
	}
	if m, err := sub.NextMsg(5 * time.Second); err != nil {
		t.Fatal(err)
	} else if got, _ := natssink.Decode(m); got.ID != evs[2].ID {
		t.Fatalf("got %s, want event 2", got.ID)
	}
}

// WireSize is exactly what the client counts against the server's maximum
// payload: a message of that size is accepted, one byte less of room is not.
func TestWireSizeMatchesTheClient(t *testing.T) {
	e := sinktest.Events(t.Name(), 1, 1)[0]
	m, err := natssink.Msg(e)
	if err != nil {
		t.Fatal(err)
	}
	size := natssink.WireSize(m, nil)
	for _, tc := range []struct {
		max  int32
		fits bool
	}{{int32(size), true}, {int32(size - 1), false}} {
		srv := natsserver.Start(t, natsserver.WithMaxPayload(tc.max))
		nc, err := nats.Connect(srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		err = nc.PublishMsg(m)
		nc.Close()
		if fits := err == nil; fits != tc.fits {
			t.Fatalf("max payload %d, message of WireSize %d: publish error %v", tc.max, size, err)
		}
		if !tc.fits && !errors.Is(err, nats.ErrMaxPayload) {
			t.Fatalf("publish error %v, want ErrMaxPayload", err)
		}
	}
}
