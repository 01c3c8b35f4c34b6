package jetstream_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	hjs "github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

func nextEvent(t *testing.T, s *hjs.EventStream) publish.Event {
	t.Helper()
	select {
	case e, ok := <-s.Events():
		if !ok {
			t.Fatalf("events closed: %v", s.Err())
		}
		return e
	case <-time.After(15 * time.Second):
		t.Fatal("no event within 15s")
	}
	return publish.Event{}
}

// expect reads len(want) events and checks their ids in order.
func expect(t *testing.T, s *hjs.EventStream, want ...publish.Event) {
	t.Helper()
	for i, w := range want {
		if e := nextEvent(t, s); e.ID != w.ID {
			t.Fatalf("event %d: %s %s term %d, want %s %s term %d", i, e.Type, e.ID, e.Term, w.Type, w.ID, w.Term)
		}
	}
}

// TestEventsDropsDuplicatesAndStale: the stream holds what two bridges
// wrote, beyond the duplicate window; a consumer through Events sees each
// change once and never an older term after a newer one.
func TestEventsDropsDuplicatesAndStale(t *testing.T) {
	g := uniq(t)
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	a, la, b := gain(g, "a", 100), lost(g, "a", 100, "b"), gain(g, "b", 200)
	write(t, s, a, la, b)
	// Stored again with fresh message ids, as the stream does once the
	// duplicate window has passed: raw publishes under another msg id.
	js := client(t, url)
	for _, e := range []publish.Event{a, gain(g, "old", 50)} {
		m, err := natssink.Msg(e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishMsg(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	c := readyEv(g, "b", 200)
	write(t, s, c)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev, err := hjs.Events(ctx, js, g)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, ev, a, la, b, c)
	select {
	case e := <-ev.Events():
		t.Fatalf("unexpected event %s %s term %d", e.Type, e.ID, e.Term)
	default:
	}

	raw, err := hjs.Events(ctx, js, g, hjs.Raw())
	if err != nil {
		t.Fatal(err)
	}
	expect(t, raw, a, la, b, a, gain(g, "old", 50), c)
}

func TestEventsSince(t *testing.T) {
	g := uniq(t)
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	write(t, s, gain(g, "a", 100))
	mark := time.Now()
	b := gain(g, "b", 200)
	write(t, s, b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev, err := hjs.Events(ctx, client(t, url), g, hjs.Since(mark))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, ev, b)
}

// TestEventsResumeAfterRestart: the reader picks up where it was after
// the server restarts, without redelivering (Raw: no Follower to hide it).
func TestEventsResumeAfterRestart(t *testing.T) {
	srv := natsserver.Start(t)
	g := uniq(t)
	s := connectSink(t, hjs.Config{Conn: fast(srv.URL())})
	a := gain(g, "a", 100)
	write(t, s, a)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev, err := hjs.Events(ctx, client(t, srv.URL()), g, hjs.Raw(), hjs.RetryBackoff(20*time.Millisecond, 200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, ev, a)
	srv.Restart(t)
	la, b := lost(g, "a", 100, "b"), gain(g, "b", 200)
	writeEventually(t, s, la, b)
	expect(t, ev, la, b)
}

// A reader whose stream is deleted (and made again by the bridge's next
// write) does not go quiet for ever, waiting for sequences the new stream
// may never reach: it ends, saying the stream is gone and events may be
// missing.
func TestEventsEndWhenTheStreamIsDeleted(t *testing.T) {
	srv := natsserver.Start(t)
	g := uniq(t)
	s := connectSink(t, hjs.Config{Conn: fast(srv.URL())})
	a := gain(g, "a", 100)
	write(t, s, a, lost(g, "a", 100, "b"), gain(g, "b", 200))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	js := client(t, srv.URL())
	ev, err := hjs.Events(ctx, js, g, hjs.Raw(), hjs.RetryBackoff(20*time.Millisecond, 200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, ev, a)
	if err := js.DeleteStream(ctx, hjs.DefaultStream); err != nil {
		t.Fatal(err)
	}
	writeEventually(t, s, gain(g, "c", 300)) // the sink makes the stream again
	deadline := time.After(15 * time.Second)
	for {
		select {
		case _, ok := <-ev.Events():
			if !ok {
				if !errors.Is(ev.Err(), hjs.ErrStreamGone) {
					t.Fatalf("reader ended with %v; want ErrStreamGone", ev.Err())
				}
				return
			}
		case <-deadline:
			t.Fatal("the reader still waits 15s after its stream was deleted")
		}
	}
}

// TestEventsSayWhileTheStreamCannotBeRead: a reader waiting through an
// outage says so once (WARN), rather than staying silent like one with
// nothing to read, says when it reads again (INFO), and goes on from
// where it was.
func TestEventsSayWhileTheStreamCannotBeRead(t *testing.T) {
	srv := natsserver.Start(t)
	g := uniq(t)
	s := connectSink(t, hjs.Config{Conn: fast(srv.URL())})
	a := gain(g, "a", 100)
	write(t, s, a)
	var log logs
	ev, err := hjs.Events(t.Context(), client(t, srv.URL()), g, hjs.Raw(), hjs.RetryBackoff(20*time.Millisecond, 200*time.Millisecond),
		hjs.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, ev, a)
	srv.Shutdown()
	waitLog := func(what string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !strings.Contains(log.String(), what) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the reader's log within 15 s:\n%s", what, log.String())
			}
			time.Sleep(20 * time.Millisecond) // polling interval, not ordering
		}
	}
	waitLog("level=WARN msg=\"jetstream: cannot read the events stream; retrying until it answers")
	srv.Restart(t)
	la, b := lost(g, "a", 100, "b"), gain(g, "b", 200)
	writeEventually(t, s, la, b)
	expect(t, ev, la, b)
	waitLog("level=INFO msg=\"jetstream: reading the events stream again\"")
	if n := strings.Count(log.String(), "cannot read the events stream"); n != 1 {
		t.Fatalf("%d WARNs for one outage, want 1:\n%s", n, log.String())
	}
}

// TestEventsReaderDeletesItsConsumer: a reader that stops deletes the
// consumer it read through, rather than leave it to the server for five
// idle minutes against the stream's limit of 1,000 consumers.
func TestEventsReaderDeletesItsConsumer(t *testing.T) {
	srv := natsserver.Start(t)
	g := uniq(t)
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: srv.URL()}})
	a := gain(g, "a", 100)
	write(t, s, a)
	js := client(t, srv.URL())
	consumers := func() int {
		st, err := js.Stream(context.Background(), hjs.DefaultStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Consumers
	}
	before := consumers()
	ctx, cancel := context.WithCancel(context.Background())
	ev, err := hjs.Events(ctx, js, g)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, ev, a)
	if n := consumers(); n != before+1 {
		t.Fatalf("%d consumers while the reader reads, %d before; want one more", n, before)
	}
	cancel()
	for range ev.Events() {
	}
	deadline := time.Now().Add(5 * time.Second)
	for consumers() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d consumers 5 s after the reader stopped, %d before it began: its own was left behind", consumers(), before)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
