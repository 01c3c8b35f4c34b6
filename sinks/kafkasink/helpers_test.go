package kafkasink

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
)

var topicSeq atomic.Int64

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// testConfig returns a config with topics unique to the test.
func testConfig(t *testing.T, c *kafkatest.Cluster) Config {
	name := strings.Trim(unsafeChars.ReplaceAllString(t.Name(), "_"), "_")
	if len(name) > 150 {
		name = name[:150]
	}
	n := topicSeq.Add(1)
	return Config{
		Brokers:           c.Addrs(),
		EventsTopic:       name + ".events." + itoa(n),
		OwnersTopic:       name + ".owners." + itoa(n),
		Partitions:        3,
		ReplicationFactor: 1,
		WriteTimeout:      3 * time.Second,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func connected(t *testing.T, cfg Config) *Sink {
	t.Helper()
	s, err := tryConnect(t, cfg, 10*time.Second)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return s
}

// tryConnect makes a sink (closed when the test ends) and connects it
// within d, returning the Connect error for the test to judge.
func tryConnect(t *testing.T, cfg Config, d time.Duration) (*Sink, error) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return s, s.Connect(ctx)
}

// collect reads from a stream until it has n values or ctx ends.
func collect[T any](ctx context.Context, s *Stream[T], n int) []T {
	var out []T
	for len(out) < n {
		select {
		case v, ok := <-s.C():
			if !ok {
				return out
			}
			out = append(out, v)
		case <-ctx.Done():
			return out
		}
	}
	return out
}

func eventIDs(evs []publish.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}
