package jetstream_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	hjs "github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// bucketName is a bucket no other test, nor an earlier run (-count), uses.
func bucketName(what string) string {
	return fmt.Sprintf("%s_%d", what, runSeq.Add(1))
}

// deleteBucket deletes a KV bucket, as an operator would.
func deleteBucket(t *testing.T, bucket string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client(t, url).DeleteKeyValue(ctx, bucket); err != nil {
		t.Fatalf("delete %s: %v", bucket, err)
	}
}

// beating writes an active heartbeat of src to the sink's bridges bucket
// every interval until the test ends, as a running bridge does.
func beating(t *testing.T, s *hjs.Sink, src string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tk := time.NewTicker(interval)
		defer tk.Stop()
		for {
			now := time.Now()
			wctx, wcancel := context.WithTimeout(ctx, time.Second)
			_ = s.WriteHeartbeat(wctx, publish.Heartbeat{Source: src, State: publish.BridgeActive, Time: now, Interval: interval, Confirmed: now})
			wcancel()
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
		}
	}()
}

// quiet fails if an update of group arrives within d.
func quiet(t *testing.T, w *hjs.OwnerWatch, group string, d time.Duration, why string) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case u, ok := <-w.Updates():
			if !ok {
				t.Fatalf("updates closed: %v", w.Err())
			}
			if u.Group == group {
				t.Fatalf("%s: got %+v", why, u)
			}
		case <-deadline:
			return
		}
	}
}

// confirmedBy waits for an update of group naming node as owner, fresh and
// confirmed by src (an update may come first unjudged, before the
// follower has read src's first heartbeat).
func confirmedBy(t *testing.T, w *hjs.OwnerWatch, group, node, src string) hjs.OwnerUpdate {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		u := nextFor(t, w, group, time.Until(deadline))
		if u.Owner == nil || u.Owner.Owner.Node != node || u.Stale {
			t.Fatalf("%+v; want %s, fresh", u, node)
		}
		if u.ConfirmedBy == src && u.BridgeState == publish.BridgeActive {
			return u
		}
	}
}

// afresh returns the first update of group that does not merely say the
// old bucket's value is stale now (the bucket gone, or made again and read
// afresh), nor that the new one holds nothing of
// the group yet (a bucket made again and read before the write that made
// it stored the group's owner): what the new bucket says. Each update it
// passes over must be stale.
func afresh(t *testing.T, w *hjs.OwnerWatch, group string) hjs.OwnerUpdate {
	t.Helper()
	for {
		u := nextFor(t, w, group, 10*time.Second)
		if u.Revision != 0 && !strings.Contains(u.StaleReason, "reading it afresh") && !strings.Contains(u.StaleReason, "is gone") {
			return u
		}
		if !u.Stale {
			t.Fatalf("while the bucket made again is read afresh: %+v, want it stale", u)
		}
	}
}

// TestFollowOwnersBucketMadeAgain: the owners bucket is deleted while
// Follow reads it, and the sink's next write makes it again, its revisions
// starting over far below the one the follower had read to. The follower
// notices and reads the new bucket from its start: the owners written
// there are delivered at once, not once the new bucket has grown past the
// old one's revisions.
func TestFollowOwnersBucketMadeAgain(t *testing.T) {
	p := uniq(t)
	g, other := p+"/g", p+"/other"
	bucket := bucketName("again_owners")
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}, Bucket: bucket})
	for i := 1; i <= 20; i++ {
		write(t, s, gain(other, fmt.Sprintf("o%d", i), int64(10*i)))
	}
	write(t, s, gain(g, "a", 1000)) // revision 21
	w := follow(t, g, hjs.FromBucket(bucket))
	if u := nextFor(t, w, g, 10*time.Second); u.Owner == nil || u.Owner.Owner.Node != "a" || u.Revision != 21 {
		t.Fatalf("initial %+v; want a at revision 21", u)
	}
	deleteBucket(t, bucket)
	writeEventually(t, s, lost(g, "a", 1000, "b"), gain(g, "b", 2000)) // made again: b at revision 1
	u := afresh(t, w, g)
	if u.Owner == nil || u.Owner.Owner.Node != "b" || u.Revision != 1 || u.Initial {
		t.Fatalf("after the bucket was made again: %+v; want b at revision 1", u)
	}
	write(t, s, lost(g, "b", 2000, "c"), gain(g, "c", 3000))
	if u := nextFor(t, w, g, 10*time.Second); u.Owner == nil || u.Owner.Owner.Node != "c" || u.Revision != 2 {
		t.Fatalf("next change in the new bucket: %+v; want c at revision 2", u)
	}
}

// TestFollowOwnersBucketGoneIsStale: while the owners bucket is missing,
// the values read from it are stale whatever the heartbeats say: nothing
// confirms them. When a bridge makes it again, the follower reads the new
// bucket: a group it lacks has no owner (revision 0, as for a group never
// held), stale until a bridge writes it there, and what is written there
// comes, judged as ever.
func TestFollowOwnersBucketGoneIsStale(t *testing.T) {
	p := uniq(t)
	g, h := p+"/g", p+"/h"
	b1 := source(t, "b1")
	bucket := bucketName("gone_owners")
	cfg := hjs.Config{Conn: natssink.Options{URL: url}, Bucket: bucket}
	s := connectSink(t, cfg)
	beating(t, connectSink(t, cfg), b1)
	write(t, s, from(gain(g, "a", 100), b1), from(gain(h, "x", 100), b1))
	w := follow(t, g, hjs.FromBucket(bucket))
	confirmedBy(t, w, g, "a", b1)

	deleteBucket(t, bucket)
	u := nextFor(t, w, g, 10*time.Second)
	if u.Owner == nil || u.Owner.Owner.Node != "a" || !u.Stale || !strings.Contains(u.StaleReason, "owners bucket "+bucket+" is gone") {
		t.Fatalf("bucket deleted, its bridge beating: %+v; want a again, stale, saying the bucket is gone", u)
	}
	quiet(t, w, g, 1500*time.Millisecond, "heartbeats while the bucket is gone")

	writeEventually(t, s, from(gain(h, "y", 200), b1)) // made again, holding h only
	for u = nextFor(t, w, g, 10*time.Second); strings.Contains(u.StaleReason, "reading it afresh"); u = nextFor(t, w, g, 10*time.Second) {
	}
	if u.Owner != nil || u.Revision != 0 || !u.Stale || !strings.Contains(u.StaleReason, "holds nothing of this group yet") {
		t.Fatalf("bucket made again without %s: %+v; want no owner, revision 0, stale until a bridge writes it", g, u)
	}
	quiet(t, w, g, 1500*time.Millisecond, "heartbeats while the new bucket holds nothing of the group")
	write(t, s, from(gain(g, "b", 300), b1))
	u = nextFor(t, w, g, 10*time.Second)
	if u.Owner == nil || u.Owner.Owner.Node != "b" || u.Stale || u.ConfirmedBy != b1 {
		t.Fatalf("written to the new bucket: %+v; want b, fresh, confirmed by %s", u, b1)
	}
}

// TestFollowBridgesBucketMadeAgain: the heartbeats' bucket is deleted and
// its bridge's next heartbeat makes it again, its revisions starting over
// below those the follower had read. The follower reads the new bucket
// from its start: the value is confirmed by the new heartbeats within a
// few seconds, not stale until the new bucket's revisions pass the old.
func TestFollowBridgesBucketMadeAgain(t *testing.T) {
	g := uniq(t)
	b1 := source(t, "b1")
	bridges := bucketName("again_bridges")
	cfg := hjs.Config{Conn: natssink.Options{URL: url}, BridgesBucket: bridges}
	s := connectSink(t, cfg)
	for range 300 {
		beat(t, s, b1, publish.BridgeActive, "")
	}
	write(t, s, from(gain(g, "a", 100), b1))
	beating(t, connectSink(t, cfg), b1)
	w := follow(t, g, hjs.FromBridgesBucket(bridges))
	confirmedBy(t, w, g, "a", b1)
	deleteBucket(t, bridges)
	deleted := time.Now()
	// Heartbeats every 100ms pass the old bucket's 300 only after 30s.
	var last hjs.OwnerUpdate
	stale := false
	deadline := time.After(6 * time.Second)
	for done := false; !done; {
		select {
		case u, ok := <-w.Updates():
			if !ok {
				t.Fatalf("updates closed: %v", w.Err())
			}
			if u.Group == g {
				last, stale = u, u.Stale
				t.Logf("%v after the delete: stale %t %s", time.Since(deleted).Round(time.Millisecond), u.Stale, u.StaleReason)
			}
		case <-deadline:
			done = true
		}
	}
	if stale {
		t.Fatalf("6s after the bridges bucket was made again, with heartbeats every %v: %+v; want fresh", interval, last)
	}
}

// TestFollowStoreWipedIsStaleUntilRestated: NATS is stopped, its store
// wiped, and started again. Its bridge's heartbeats make their bucket
// again at once, but the owners bucket is missing until the bridge writes
// to it: meanwhile the old owner is not presented as fresh. What the
// bridge then writes to the new bucket is delivered, though its revisions
// start over.
func TestFollowStoreWipedIsStaleUntilRestated(t *testing.T) {
	srv := natsserver.Start(t)
	g := uniq(t)
	b1 := source(t, "b1")
	s := connectSink(t, hjs.Config{Conn: fast(srv.URL())})
	for i := range 5 {
		write(t, s, from(gain(g, fmt.Sprintf("o%d", i), int64(10+i)), b1))
	}
	write(t, s, from(gain(g, "a", 100), b1))
	beating(t, connectSink(t, hjs.Config{Conn: fast(srv.URL())}), b1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := hjs.Follow(ctx, client(t, srv.URL()), g, hjs.RetryBackoff(20*time.Millisecond, 200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	confirmedBy(t, w, g, "a", b1)

	srv.Shutdown()
	if err := os.RemoveAll(srv.StoreDir()); err != nil {
		t.Fatal(err)
	}
	srv.Restart(t)
	// The heartbeats go on into a new bridges bucket; the owners bucket
	// stays missing for 3s.
	var last hjs.OwnerUpdate
	deadline := time.After(3 * time.Second)
	for done := false; !done; {
		select {
		case u, ok := <-w.Updates():
			if !ok {
				t.Fatalf("updates closed: %v", w.Err())
			}
			t.Logf("while the owners bucket is missing: owner %v stale %t %s", u.Owner != nil, u.Stale, u.StaleReason)
			last = u
		case <-deadline:
			done = true
		}
	}
	if last.Owner == nil || !last.Stale || !strings.Contains(last.StaleReason, "is gone") {
		t.Fatalf("3s with the owners bucket missing, heartbeats flowing: last update %+v; want a, stale, saying the bucket is gone", last)
	}
	writeEventually(t, s, from(gain(g, "b", 200), b1)) // the bucket made again: b at revision 1
	u := afresh(t, w, g)
	if u.Owner == nil || u.Owner.Owner.Node != "b" || u.Revision != 1 || u.Stale {
		t.Fatalf("written to the new bucket: %+v; want b at revision 1, fresh", u)
	}
}
