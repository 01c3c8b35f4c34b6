package jetstream_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/publish"
	hjs "github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// interval is the heartbeat interval of these tests: values stay fresh
// for publish.MinStaleAfter (1s) after a heartbeat.
const interval = 100 * time.Millisecond

// source is a bridge name no other test uses (the bridges bucket is
// shared).
func source(t *testing.T, name string) string {
	return strings.ReplaceAll(uniq(t), "/", "_") + "-" + name
}

func from(e publish.Event, src string) publish.Event { e.Source = src; return e }

func beat(t *testing.T, s *hjs.Sink, src string, st publish.BridgeState, ha string) publish.Heartbeat {
	t.Helper()
	now := time.Now()
	h := publish.Heartbeat{Source: src, State: st, Time: now, Interval: interval, HA: ha}
	if st == publish.BridgeActive {
		h.Confirmed = now
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WriteHeartbeat(ctx, h); err != nil {
		t.Fatalf("WriteHeartbeat(%s %s): %v", src, st, err)
	}
	return h
}

// nextFor returns the next update of group within d.
func nextFor(t *testing.T, w *hjs.OwnerWatch, group string, d time.Duration) hjs.OwnerUpdate {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case u, ok := <-w.Updates():
			if !ok {
				t.Fatalf("updates closed: %v", w.Err())
			}
			if u.Group == group {
				return u
			}
		case <-deadline:
			t.Fatalf("no update of %s within %v", group, d)
		}
	}
}

func follow(t *testing.T, group string, opts ...hjs.FollowOption) *hjs.OwnerWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := hjs.Follow(ctx, client(t, url), group, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestWriteHeartbeat(t *testing.T) {
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}, BridgesBucket: "hb_test_bridges"})
	src := source(t, "bridge@host.example.com")
	h := beat(t, s, src, publish.BridgeActive, "/ha")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := client(t, url).KeyValue(ctx, "hb_test_bridges")
	if err != nil {
		t.Fatalf("the sink did not create its bridges bucket: %v", err)
	}
	e, err := kv.Get(ctx, publish.BridgeKey(src))
	if err != nil {
		t.Fatal(err)
	}
	got, err := publish.DecodeHeartbeat(e.Value())
	if err != nil || got.Source != src || got.State != publish.BridgeActive || !got.Time.Equal(h.Time) || got.HA != "/ha" || got.Interval != interval {
		t.Fatalf("stored heartbeat %+v (%v), want %+v", got, err, h)
	}
	if _, err := hjs.New(hjs.Config{Conn: natssink.Options{URL: url}, Bucket: "x", BridgesBucket: "x"}); err == nil {
		t.Fatal("owners and heartbeats in one bucket accepted")
	}
}

// A value whose bridge stops confirming turns stale after the bound with
// nothing else changing, fresh again with the next heartbeat, and stale at
// once when the bridge says it stopped.
func TestFollowStaleness(t *testing.T) {
	g := uniq(t)
	b1 := source(t, "b1")
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	confirmed := time.Now()
	beat(t, s, b1, publish.BridgeActive, "")
	write(t, s, from(gain(g, "a", 100), b1))

	w := follow(t, g)
	u := nextFor(t, w, g, 10*time.Second)
	if u.Owner == nil || u.Owner.Owner.Node != "a" || u.Stale || u.ConfirmedBy != b1 || u.StaleAt.IsZero() {
		t.Fatalf("initial update %+v: want a, fresh, confirmed by %s", u, b1)
	}
	rev := u.Revision

	u = nextFor(t, w, g, 5*time.Second)
	if !u.Stale || u.Revision != rev || u.Owner == nil || u.Owner.Owner.Node != "a" || !strings.Contains(u.StaleReason, "no heartbeat") {
		t.Fatalf("after the bound: %+v, want the same value again, stale", u)
	}
	if d := time.Since(confirmed); d < publish.MinStaleAfter {
		t.Fatalf("stale after %v, before the bound %v", d, publish.MinStaleAfter)
	}

	beat(t, s, b1, publish.BridgeActive, "")
	if u = nextFor(t, w, g, 5*time.Second); u.Stale || u.Revision != rev {
		t.Fatalf("after a heartbeat: %+v, want fresh again", u)
	}
	last := beat(t, s, b1, publish.BridgeActive, "")
	st := publish.Heartbeat{Source: b1, State: publish.BridgeStopped, Time: time.Now(), Interval: interval, Confirmed: last.Time}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WriteHeartbeat(ctx, st); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	u = nextFor(t, w, g, 5*time.Second)
	if !u.Stale || !strings.Contains(u.StaleReason, "stopped") || !u.Confirmed.Equal(last.Time) {
		t.Fatalf("after the bridge stopped: %+v, want stale, last confirmed %v", u, last.Time)
	}
	if d := time.Since(began); d > 500*time.Millisecond {
		t.Fatalf("a stopped bridge was reported after %v, not at once", d)
	}
}

// "No owner" is judged too: the delete marker names its bridge.
func TestFollowStaleNoOwner(t *testing.T) {
	g := uniq(t)
	b1 := source(t, "b1")
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	beat(t, s, b1, publish.BridgeActive, "")
	write(t, s, from(gain(g, "a", 100), b1), from(lost(g, "a", 100, ""), b1))
	beat(t, s, b1, publish.BridgeStopped, "")
	u := nextFor(t, follow(t, g), g, 10*time.Second)
	if u.Owner != nil || !u.Stale || u.ConfirmedBy != b1 {
		t.Fatalf("no owner, written by a stopped bridge: %+v, want stale by %s", u, b1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := client(t, url).Stream(ctx, "KV_"+hjs.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(ctx, "$KV."+hjs.DefaultBucket+"."+publish.MustTokens(g))
	if err != nil || m.Header.Get(hjs.HeaderSource) != b1 || m.Header.Get("KV-Operation") != "DEL" {
		t.Fatalf("delete marker %v %v: want %s=%s", m, err, hjs.HeaderSource, b1)
	}
}

// A bridge that re-states a value (a takeover's snapshot) writes it under
// its own name, and then confirms it.
func TestFollowTakeoverRestates(t *testing.T) {
	g := uniq(t)
	b1, b2 := source(t, "b1"), source(t, "b2")
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	beat(t, s, b1, publish.BridgeActive, "")
	e := from(gain(g, "a", 100), b1)
	write(t, s, e)
	beat(t, s, b1, publish.BridgeStopped, "")
	w := follow(t, g)
	if u := nextFor(t, w, g, 10*time.Second); !u.Stale {
		t.Fatalf("b1 stopped: %+v, want stale", u)
	}
	beat(t, s, b2, publish.BridgeActive, "")
	e.Snapshot = true
	write(t, s, from(e, b2))
	u := nextFor(t, w, g, 5*time.Second)
	if u.Stale || u.ConfirmedBy != b2 || u.Owner == nil || u.Owner.Source != b2 || u.Owner.Owner.Node != "a" {
		t.Fatalf("after b2 re-stated it: %+v, want a, fresh, written and confirmed by %s", u, b2)
	}
}

// The active bridge of an HA election confirms the values another bridge
// of the same election wrote; a bridge of another election does not.
func TestFollowHAElectionConfirms(t *testing.T) {
	g := uniq(t)
	b1, b2, other := source(t, "b1"), source(t, "b2"), source(t, "other")
	ha := "/" + source(t, "ha")
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	beat(t, s, b1, publish.BridgeActive, ha)
	write(t, s, from(gain(g, "a", 100), b1))
	beat(t, s, b1, publish.BridgeStopped, ha)
	w := follow(t, g)
	if u := nextFor(t, w, g, 10*time.Second); !u.Stale {
		t.Fatalf("b1 stopped: %+v, want stale", u)
	}
	beat(t, s, other, publish.BridgeActive, ha+"-not")
	beat(t, s, b2, publish.BridgeActive, ha)
	u := nextFor(t, w, g, 5*time.Second)
	if u.Stale || u.ConfirmedBy != b2 || u.Owner == nil || u.Owner.Source != b1 {
		t.Fatalf("b2 active in b1's election: %+v, want b1's value, fresh, confirmed by %s", u, b2)
	}
}

// Without any heartbeat (no bridges bucket: bridges older than heartbeats)
// values are not judged, and Follow works as before.
func TestFollowWithoutHeartbeats(t *testing.T) {
	g := uniq(t)
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	write(t, s, gain(g, "a", 100))
	u := nextFor(t, follow(t, g, hjs.FromBridgesBucket("no_such_bridges")), g, 10*time.Second)
	if u.Owner == nil || u.Stale || u.BridgeState != "" || u.ConfirmedBy != "test" {
		t.Fatalf("without heartbeats: %+v, want the owner, not judged", u)
	}
	if _, err := hjs.Follow(context.Background(), client(t, url), g, hjs.FromBridgesBucket("bad.name")); err == nil {
		t.Fatal("a bad bridges bucket name was accepted")
	}
}

// A value delivered before its bridge's first heartbeat (not judged yet)
// is delivered again once the bridge confirms it: a reader learns that it
// is now confirmed, by whom and when, and not only when it turns stale.
func TestFollowValueConfirmedAfterDelivery(t *testing.T) {
	g := uniq(t)
	b := source(t, "late")
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	write(t, s, from(gain(g, "a", 100), b))
	w := follow(t, g)
	u := nextFor(t, w, g, 10*time.Second)
	if u.Owner == nil || u.Stale || u.BridgeState != "" || !u.Confirmed.IsZero() {
		t.Fatalf("before any heartbeat of %s: %+v; want a, not judged", b, u)
	}
	h := beat(t, s, b, publish.BridgeActive, "")
	u = nextFor(t, w, g, 5*time.Second)
	if u.Owner == nil || u.Stale || u.ConfirmedBy != b || u.BridgeState != publish.BridgeActive || !u.Confirmed.Equal(h.Time) {
		t.Fatalf("after %s's first heartbeat: %+v; want a, confirmed by it", b, u)
	}
}

// A reader cut off from NATS cannot tell a quiet bridge from its own
// silence: the value turns stale once its bound passes, as ever, but the
// reason names the reader's lost connection instead of blaming the bridge
// alone; back on line, the next heartbeat makes it fresh again.
func TestFollowReaderCutOffSaysSo(t *testing.T) {
	g := uniq(t)
	b1 := source(t, "b1")
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	beat(t, s, b1, publish.BridgeActive, "")
	write(t, s, from(gain(g, "a", 100), b1))

	p, err := faultproxy.New(strings.TrimPrefix(url, "nats://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := hjs.Follow(ctx, client(t, "nats://"+p.Addr()), g)
	if err != nil {
		t.Fatal(err)
	}
	if u := nextFor(t, w, g, 10*time.Second); u.Stale {
		t.Fatalf("initial update %+v: want fresh", u)
	}
	p.Refuse(true)
	p.Cut()
	u := nextFor(t, w, g, 5*time.Second)
	if !u.Stale || !strings.Contains(u.StaleReason, "this reader has been disconnected from NATS since") || !strings.Contains(u.StaleReason, "the bridge may still be publishing") {
		t.Fatalf("reader cut off: %+v, want stale, saying the reader is disconnected", u)
	}
	p.Refuse(false)
	beat(t, s, b1, publish.BridgeActive, "")
	if u := nextFor(t, w, g, 10*time.Second); u.Stale {
		t.Fatalf("reader back, bridge confirming: %+v, want fresh", u)
	}
}

// A bridge whose clock runs ten minutes ahead, and that then dies, does
// not keep its values fresh for ten minutes: a heartbeat counts from when
// the server stored it at the latest.
func TestFollowHeartbeatFromAClockAhead(t *testing.T) {
	g := uniq(t)
	b1 := source(t, "b1")
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	ahead := time.Now().Add(10 * time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WriteHeartbeat(ctx, publish.Heartbeat{Source: b1, State: publish.BridgeActive, Time: ahead, Confirmed: ahead, Interval: interval}); err != nil {
		t.Fatal(err)
	}
	write(t, s, from(gain(g, "a", 100), b1))
	w := follow(t, g)
	u := nextFor(t, w, g, 10*time.Second)
	if !u.Stale {
		u = nextFor(t, w, g, 5*time.Second)
	}
	if !u.Stale || !strings.Contains(u.StaleReason, "no heartbeat") {
		t.Fatalf("the bridge's last heartbeat is dated 10 minutes ahead and it wrote none since: %+v, want stale within the bound", u)
	}
}

// TestFollowHeartbeatDeletedIsStale: the heartbeat of a bridge that died
// is deleted from the bridges bucket (a purge when the bridge is taken
// down, a key removed by hand). Its values used to be read as from a
// bridge that sends no heartbeats, not judged, and `who` exited 0 naming
// an owner long gone (found by a review). They are stale now, saying why,
// for a reader that saw the deletion and for one that starts after it.
func TestFollowHeartbeatDeletedIsStale(t *testing.T) {
	for _, how := range []string{"delete", "purge"} {
		t.Run(how, func(t *testing.T) {
			g := uniq(t)
			b1 := source(t, "b1")
			s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
			beat(t, s, b1, publish.BridgeActive, "")
			write(t, s, from(gain(g, "a", 100), b1))
			w := follow(t, g)
			if u := nextFor(t, w, g, 10*time.Second); u.Owner == nil || u.Stale {
				t.Fatalf("initial update %+v: want a, fresh", u)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			kv, err := client(t, url).KeyValue(ctx, hjs.DefaultBridgesBucket)
			if err != nil {
				t.Fatal(err)
			}
			del := kv.Delete
			if how == "purge" {
				del = kv.Purge
			}
			if err := del(ctx, publish.BridgeKey(b1)); err != nil {
				t.Fatal(err)
			}
			u := nextFor(t, w, g, 5*time.Second)
			if !u.Stale || !strings.Contains(u.StaleReason, "was deleted") || u.Owner == nil {
				t.Fatalf("after the heartbeat was deleted: %+v, want the owner, stale, saying its heartbeat was deleted", u)
			}
			if u := nextFor(t, follow(t, g), g, 10*time.Second); !u.Stale || !strings.Contains(u.StaleReason, "was deleted") {
				t.Fatalf("a reader started after the deletion: %+v, want stale, saying its heartbeat was deleted", u)
			}
		})
	}
}
