package jetstream_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	hjs "github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// An operator's stream and bucket are used as configured: herald changes
// nothing in them, and refuses, saying what to change, a stream it cannot
// work with. A stream herald creates takes the sink's limits.
func TestExistingStreamIsRespected(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	srv := natsserver.Start(t)
	js := client(t, srv.URL())
	mine := jetstream.StreamConfig{Name: hjs.DefaultStream, Subjects: []string{"herald.>"}, Description: "the operator's",
		MaxAge: time.Hour, MaxBytes: 100 << 20, Duplicates: 3 * time.Minute, Storage: jetstream.FileStorage}
	if _, err := js.CreateStream(ctx, mine); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: hjs.DefaultBucket, History: 5, Description: "the operator's"}); err != nil {
		t.Fatal(err)
	}
	s, err := hjs.New(hjs.Config{Conn: natssink.Options{URL: srv.URL()}, MaxAge: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Connect(ctx); err != nil {
		t.Fatalf("connect to an operator's stream: %v", err)
	}
	st, err := js.Stream(ctx, hjs.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	got := st.CachedInfo().Config
	if got.MaxAge != time.Hour || got.MaxBytes != 100<<20 || got.Duplicates != 3*time.Minute || got.Description != "the operator's" {
		t.Errorf("herald changed the operator's stream: %+v", got)
	}
	kv, err := js.KeyValue(ctx, hjs.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := kv.Status(ctx); err != nil || st.History() != 5 {
		t.Errorf("herald changed the operator's bucket: history %v, %v", st, err)
	}

	for _, tc := range []struct {
		stream   jetstream.StreamConfig
		replicas int
		want     string
	}{
		{jetstream.StreamConfig{Name: hjs.DefaultStream, Subjects: []string{"other.>"}}, 0, "does not capture herald.>"},
		{jetstream.StreamConfig{Name: hjs.DefaultStream, Subjects: []string{"herald.>"}, Duplicates: time.Minute}, 0, "deduplicates over 1m0s"},
		// Copies asked for and not kept: said, not silently accepted.
		{jetstream.StreamConfig{Name: hjs.DefaultStream, Subjects: []string{"herald.>"}}, 3, "has replicas 1, fewer than the 3 asked for"},
	} {
		srv := natsserver.Start(t)
		js := client(t, srv.URL())
		if _, err := js.CreateStream(ctx, tc.stream); err != nil {
			t.Fatal(err)
		}
		s, _ := hjs.New(hjs.Config{Conn: natssink.Options{URL: srv.URL()}, Replicas: tc.replicas})
		err := s.Connect(ctx)
		_ = s.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("stream %+v: connect %v; want an error saying %q", tc.stream, err, tc.want)
		}
	}

	// Missing, the stream is created with the sink's limits.
	fresh := natsserver.Start(t)
	s2, err := hjs.New(hjs.Config{Conn: natssink.Options{URL: fresh.URL()}, MaxAge: 10 * time.Minute, MaxBytes: 1 << 20, Duplicates: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	st2, err := client(t, fresh.URL()).Stream(ctx, hjs.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if c := st2.CachedInfo().Config; c.MaxAge != 10*time.Minute || c.MaxBytes != 1<<20 || c.Duplicates != 90*time.Second {
		t.Errorf("stream herald created: max age %v, max bytes %d, duplicates %v", c.MaxAge, c.MaxBytes, c.Duplicates)
	}
	if _, err := hjs.New(hjs.Config{Conn: natssink.Options{URL: fresh.URL()}, MaxBytes: -1}); !errors.Is(err, hjs.ErrConfig) {
		t.Errorf("negative MaxBytes: %v", err)
	}
}

// TestOwnersBucketThatDropsValuesIsRefused: an owners bucket made with a
// TTL (or limits that discard old values) drops the value of a group
// whose owner has not changed, and readers, its bridge's heartbeats still
// confirming, were told it had no owner, fresh. The sink refuses such a
// bucket at start (publish.ErrSinkConfig: exit 78 from the bridge).
func TestOwnersBucketThatDropsValuesIsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		bucket jetstream.KeyValueConfig
		want   string
	}{
		{jetstream.KeyValueConfig{Bucket: hjs.DefaultBucket, TTL: time.Hour}, "a TTL of 1h0m0s"},
		{jetstream.KeyValueConfig{Bucket: hjs.DefaultBucket, History: 5}, ""},
		// the bridges' heartbeats: a TTL drops the last heartbeat of a
		// bridge that died, and its values were then read as unjudged
		{jetstream.KeyValueConfig{Bucket: hjs.DefaultBridgesBucket, TTL: 30 * time.Second}, "a TTL of 30s: it would drop the last heartbeat of a bridge that died"},
		{jetstream.KeyValueConfig{Bucket: hjs.DefaultBridgesBucket, History: 3}, ""},
	} {
		srv := natsserver.Start(t)
		js := client(t, srv.URL())
		if _, err := js.CreateKeyValue(ctx, tc.bucket); err != nil {
			t.Fatal(err)
		}
		s, err := hjs.New(hjs.Config{Conn: natssink.Options{URL: srv.URL()}})
		if err != nil {
			t.Fatal(err)
		}
		err = s.Connect(ctx)
		_ = s.Close()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("bucket %+v: %v; want it used", tc.bucket, err)
		case tc.want != "" && (!errors.Is(err, publish.ErrSinkConfig) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("bucket %+v: connect %v; want a configuration error saying %q", tc.bucket, err, tc.want)
		}
	}
}
