package jetstream_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	hjs "github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// url is the package's shared server; every test writes its own groups
// (named after the test), so they share the HERALD stream without seeing
// each other. Tests that stop the server start their own.
var url string

func TestMain(m *testing.M) { os.Exit(natsserver.TestMain(m, func(u string) { url = u })) }

var runSeq atomic.Int64

// uniq is a group path no other test, nor an earlier run of this test in
// the same process (-count), uses: the stream and bucket outlive tests.
func uniq(t *testing.T) string {
	return fmt.Sprintf("/%s/run%d", t.Name(), runSeq.Add(1))
}

// fast reconnects quickly, for tests that restart the server.
func fast(u string) natssink.Options {
	return natssink.Options{URL: u, ReconnectWait: 20 * time.Millisecond, MaxReconnectWait: 100 * time.Millisecond, Timeout: 2 * time.Second}
}

func newSink(t *testing.T, cfg hjs.Config) *hjs.Sink {
	t.Helper()
	s, err := hjs.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func connectSink(t *testing.T, cfg hjs.Config) *hjs.Sink {
	t.Helper()
	s := newSink(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func write(t *testing.T, s *hjs.Sink, evs ...publish.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Write(ctx, evs); err != nil {
		t.Fatal(err)
	}
}

// client returns a plain JetStream client on u, as a consumer would have.
func client(t *testing.T, u string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(u, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// readStream returns the events stored for groups under prefix, waiting
// until there are at least min or ctx ends.
func readStream(t *testing.T, ctx context.Context, js jetstream.JetStream, stream, prefix string, min int) []publish.Event {
	t.Helper()
	c, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"herald.*." + publish.MustTokens(prefix) + ".>"},
	})
	if err != nil {
		t.Fatalf("ordered consumer on %s: %v", stream, err)
	}
	var out []publish.Event
	for len(out) < min && ctx.Err() == nil {
		b, err := c.Fetch(min-len(out), jetstream.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		for m := range b.Messages() {
			e, err := natssink.Decode(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
			if err != nil {
				t.Fatalf("decode %s: %v", m.Subject(), err)
			}
			out = append(out, e)
		}
	}
	return out
}

// countStored is how many messages the stream holds for groups under prefix.
func countStored(t *testing.T, js jetstream.JetStream, stream, prefix string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter("herald.*."+publish.MustTokens(prefix)+".>"))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}
