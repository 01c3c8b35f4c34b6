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

// next returns the next update, failing the test after a deadline.
func next(t *testing.T, w *hjs.OwnerWatch) hjs.OwnerUpdate {
	t.Helper()
	select {
	case u, ok := <-w.Updates():
		if !ok {
			t.Fatalf("updates closed: %v", w.Err())
		}
		return u
	case <-time.After(15 * time.Second):
		t.Fatal("no owner update within 15s")
	}
	return hjs.OwnerUpdate{}
}

func wantOwner(t *testing.T, u hjs.OwnerUpdate, group, node string, initial bool) {
	t.Helper()
	got := "-"
	if u.Owner != nil {
		got = u.Owner.Owner.Node
	}
	want := node
	if want == "" {
		want = "-"
	}
	if u.Group != group || got != want || u.Initial != initial {
		t.Fatalf("update %s owner %s initial %t, want %s owner %s initial %t", u.Group, got, u.Initial, group, want, initial)
	}
}

func TestFollowCurrentThenUpdates(t *testing.T) {
	g := uniq(t) + "/g"
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	write(t, s, gain(g, "a", 100))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := hjs.Follow(ctx, client(t, url), g)
	if err != nil {
		t.Fatal(err)
	}
	wantOwner(t, next(t, w), g, "a", true)
	select {
	case <-w.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("not synced after the initial value")
	}
	write(t, s, lost(g, "a", 100, "b"), gain(g, "b", 200))
	wantOwner(t, next(t, w), g, "b", false)
	write(t, s, readyEv(g, "b", 200))
	if u := next(t, w); u.Owner == nil || !u.Owner.Ready {
		t.Fatalf("after ready: %+v", u)
	}
	write(t, s, lost(g, "b", 200, ""))
	wantOwner(t, next(t, w), g, "", false)

	cancel()
	for range w.Updates() {
	}
	if !errors.Is(w.Err(), context.Canceled) {
		t.Fatalf("Err after cancel: %v", w.Err())
	}
}

func TestFollowUnknownGroupSaysNoOwner(t *testing.T) {
	g := uniq(t)
	connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}}) // makes sure the bucket exists
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := hjs.Follow(ctx, client(t, url), g)
	if err != nil {
		t.Fatal(err)
	}
	wantOwner(t, next(t, w), g, "", true)
}

func TestFollowAllGroups(t *testing.T) {
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}, Bucket: "all_owners"})
	p := uniq(t)
	write(t, s, gain(p+"/x", "a", 100), gain(p+"/y", "b", 110))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := hjs.Follow(ctx, client(t, url), "", hjs.FromBucket("all_owners"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for len(got) < 2 {
		u := next(t, w)
		if !strings.HasPrefix(u.Group, p+"/") {
			continue // an earlier run's group (go test -count)
		}
		if !u.Initial || u.Owner == nil {
			t.Fatalf("initial value %+v", u)
		}
		got[u.Group] = u.Owner.Owner.Node
	}
	if got[p+"/x"] != "a" || got[p+"/y"] != "b" {
		t.Fatalf("initial owners %v", got)
	}
	write(t, s, lost(p+"/y", "b", 110, ""))
	u := next(t, w)
	for !strings.HasPrefix(u.Group, p+"/") {
		u = next(t, w)
	}
	wantOwner(t, u, p+"/y", "", false)
}

func TestFollowNoBucket(t *testing.T) {
	_, err := hjs.Follow(context.Background(), client(t, url), "/x", hjs.FromBucket("never_made"))
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("missing bucket: %v", err)
	}
	// Whether no bridge ever ran or one ran and the bucket was deleted,
	// the reader is told what makes the bucket.
	if !strings.Contains(err.Error(), "makes it when it starts, and again if it was deleted") {
		t.Errorf("missing bucket: %v; want it to say what makes the bucket", err)
	}
}

// TestFollowResumesAfterRestart: the watch comes back by itself after the
// server restarts, delivers the change made after, and does not repeat
// what it had delivered.
func TestFollowResumesAfterRestart(t *testing.T) {
	srv := natsserver.Start(t)
	g := uniq(t)
	s := connectSink(t, hjs.Config{Conn: fast(srv.URL())})
	write(t, s, gain(g, "a", 100))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := hjs.Follow(ctx, client(t, srv.URL()), g, hjs.RetryBackoff(20*time.Millisecond, 200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	wantOwner(t, next(t, w), g, "a", true)

	srv.Restart(t)
	writeEventually(t, s, lost(g, "a", 100, "b"), gain(g, "b", 200))
	wantOwner(t, next(t, w), g, "b", false)
	write(t, s, lost(g, "b", 200, ""))
	wantOwner(t, next(t, w), g, "", false)
}

// writeEventually retries a Write as the pipeline does until it succeeds.
func writeEventually(t *testing.T, s *hjs.Sink, evs ...publish.Event) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := s.Write(ctx, evs)
		if errors.Is(err, publish.ErrReconnect) {
			_ = s.Connect(ctx)
		}
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("write still failing after 20s: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // the pipeline's retry cadence, not ordering
	}
}
