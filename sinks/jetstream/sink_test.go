package jetstream_test

import (
	"context"
	"errors"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	hjs "github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
	"github.com/zkherald/herald/sinks/sinktest"
)

// TestConformance gives every case a server of its own: the suite names
// groups after the test, and a stream that outlives a run (go test -count)
// would take the next run's events for duplicates.
func TestConformance(t *testing.T) {
	var urls sync.Map // publish.Sink -> server URL
	sinktest.Run(t, sinktest.Harness{
		New: func(t *testing.T) publish.Sink {
			srv := natsserver.Start(t)
			s, err := hjs.New(hjs.Config{Conn: natssink.Options{URL: srv.URL()}})
			if err != nil {
				t.Fatal(err)
			}
			urls.Store(s, srv.URL())
			return s
		},
		Read: func(t *testing.T, ctx context.Context, s publish.Sink, min int) []publish.Event {
			u, _ := urls.Load(s)
			return readStream(t, ctx, client(t, u.(string)), hjs.DefaultStream, "/"+t.Name(), min)
		},
		Dedups: true,
	})
}

// TestDedupAcrossRestart: a bridge that restarts re-publishes what it had
// published (its snapshot); the stream stores each event once.
func TestDedupAcrossRestart(t *testing.T) {
	evs := sinktest.Events(uniq(t)[1:], 2, 3)
	first := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	write(t, first, evs...)
	_ = first.Close()
	second := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	write(t, second, evs...)
	if n := countStored(t, client(t, url), hjs.DefaultStream, path.Dir(evs[0].Group)); n != uint64(len(evs)) {
		t.Fatalf("stream holds %d messages for %d distinct events", n, len(evs))
	}
}

// TestServerRestartLosesNothing: the NATS server goes away mid-stream and
// comes back with the same store. Write fails while it is down and succeeds
// after, without a new Connect, and the stream holds every event once.
func TestServerRestartLosesNothing(t *testing.T) {
	srv := natsserver.Start(t)
	s := connectSink(t, hjs.Config{Conn: fast(srv.URL())})
	evs := sinktest.Events(t.Name(), 3, 6)
	half := len(evs) / 2
	write(t, s, evs[:half]...)

	srv.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	err := s.Write(ctx, evs[half:])
	cancel()
	if err == nil {
		t.Fatal("write succeeded with the server down")
	}

	srv.Restart(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = s.Write(ctx, evs[half:])
		cancel()
		if err == nil {
			break
		}
		if errors.Is(err, publish.ErrReconnect) { // as the pipeline would
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = s.Connect(ctx)
			cancel()
		}
		if time.Now().After(deadline) {
			t.Fatalf("write still failing 20s after restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // the pipeline's retry cadence, not ordering
	}
	js := client(t, srv.URL())
	if n := countStored(t, js, hjs.DefaultStream, "/"+t.Name()); n != uint64(len(evs)) {
		t.Fatalf("stream holds %d messages, want %d", n, len(evs))
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := readStream(t, ctx, js, hjs.DefaultStream, "/"+t.Name(), len(evs))
	last := map[string]int64{}
	for _, e := range got {
		if e.Term <= last[e.Group] {
			t.Fatalf("group %s: term %d after %d: out of order", e.Group, e.Term, last[e.Group])
		}
		last[e.Group] = e.Term
	}
}

func TestWriteBeforeConnectAndAfterClose(t *testing.T) {
	s := newSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	if err := s.Write(context.Background(), sinktest.Events(t.Name(), 1, 1)); !errors.Is(err, publish.ErrReconnect) {
		t.Fatalf("write before connect: %v, want ErrReconnect", err)
	}
	_ = s.Close()
	if err := s.Write(context.Background(), sinktest.Events(t.Name(), 1, 1)); !errors.Is(err, hjs.ErrClosed) {
		t.Fatalf("write after close: %v, want ErrClosed", err)
	}
}

// TestStoredHeaders: what the stream keeps is the CloudEvents message plus
// the Nats-Msg-Id JetStream de-duplicates by, equal to ce-id, with header
// names as written (lower case), as a consumer in any language reads them.
func TestStoredHeaders(t *testing.T) {
	e := gain(uniq(t), "a", 100)
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	write(t, s, e)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := client(t, url).Stream(ctx, hjs.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	subj, _ := publish.Subject(e.Type, e.Group)
	m, err := st.GetLastMsgForSubject(ctx, subj)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"Nats-Msg-Id": e.ID, "ce-id": e.ID, "ce-specversion": "1.0", "ce-type": "leader.elected",
		"ce-subject": e.Group, "ce-source": "test", "ce-time": e.Time.Format(time.RFC3339Nano),
		"content-type": "application/json", "ce-term": "100",
	} {
		if got := m.Header[k]; len(got) != 1 || got[0] != want {
			t.Errorf("header %s = %q, want %q (all %v)", k, got, want, m.Header)
		}
	}
}

// An event larger than the server's maximum payload (with JetStream's own
// headers) can never be stored: Write stores the events before it and
// says which one it refuses, so the pipeline drops it from this sink
// instead of retrying it forever.
func TestWriteRefusesAnEventTooLarge(t *testing.T) {
	srv := natsserver.Start(t, natsserver.WithMaxPayload(2048))
	s := connectSink(t, hjs.Config{Conn: fast(srv.URL())})
	evs := sinktest.Events(t.Name(), 1, 3)
	big := evs[1]
	big.Source = strings.Repeat("s", 1700)
	evs[1] = big.WithID()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.Write(ctx, evs)
	var rej *publish.RejectedError
	if !errors.As(err, &rej) || rej.Index != 1 || !strings.Contains(err.Error(), "maximum payload") {
		t.Fatalf("Write = %v, want a RejectedError for event 1 naming the maximum payload", err)
	}
	write(t, s, evs[2:]...)
	js := client(t, srv.URL())
	got := readStream(t, ctx, js, hjs.DefaultStream, "/"+t.Name(), 2)
	if len(got) != 2 || got[0].ID != evs[0].ID || got[1].ID != evs[2].ID {
		t.Fatalf("stream holds %v, want events 0 and 2", got)
	}
}

// TestWriteRefusesAGroupPathTooLong: a group whose path makes a subject
// longer than a NATS server's control line (1,500 dots, three bytes each
// once encoded) made the server close the connection at every publish,
// and the sink retried it for ever with every later event behind it. It
// is refused like an event too large, and the events after it are stored.
func TestWriteRefusesAGroupPathTooLong(t *testing.T) {
	srv := natsserver.Start(t)
	s := connectSink(t, hjs.Config{Conn: fast(srv.URL())})
	evs := sinktest.Events(t.Name(), 1, 3)
	long := evs[1]
	long.Group = "/" + t.Name() + "/x" + strings.Repeat(".", 1500)
	evs[1] = long.WithID()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.Write(ctx, evs)
	var rej *publish.RejectedError
	if !errors.As(err, &rej) || rej.Index != 1 || !strings.Contains(err.Error(), "max_control_line") {
		t.Fatalf("Write = %v, want a RejectedError for event 1 naming the control line", err)
	}
	write(t, s, evs[2:]...)
	js := client(t, srv.URL())
	got := readStream(t, ctx, js, hjs.DefaultStream, "/"+t.Name(), 2)
	if len(got) != 2 || got[0].ID != evs[0].ID || got[1].ID != evs[2].ID {
		t.Fatalf("stream holds %v, want events 0 and 2", got)
	}
}

// TestStreamAndBucketDeletedAreMadeAgain: someone deletes the stream and
// the owners bucket while the sink runs. Its next write says it must
// reconnect (the server answers that no stream takes the subject), and
// the Connect the pipeline then makes creates both again: the events
// written after are stored, and the bucket names their owner.
func TestStreamAndBucketDeletedAreMadeAgain(t *testing.T) {
	srv := natsserver.Start(t)
	s := connectSink(t, hjs.Config{Conn: fast(srv.URL())})
	evs := sinktest.Events(t.Name(), 1, 4)
	write(t, s, evs[:2]...)
	js := client(t, srv.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := js.DeleteStream(ctx, hjs.DefaultStream); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(ctx, hjs.DefaultBucket); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := s.Write(wctx, evs[2:])
		wcancel()
		if err == nil {
			break
		}
		if !errors.Is(err, publish.ErrReconnect) {
			t.Fatalf("write to a deleted stream: %v; want it to ask for a reconnect", err)
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.Connect(cctx) // as the pipeline would
		ccancel()
		if time.Now().After(deadline) {
			t.Fatalf("still failing 15s after the stream was deleted: %v", err)
		}
	}
	if n := countStored(t, js, hjs.DefaultStream, "/"+t.Name()); n != 2 {
		t.Fatalf("the stream made again holds %d events of the group, want the 2 written after", n)
	}
	kv, err := js.KeyValue(ctx, hjs.DefaultBucket)
	if err != nil {
		t.Fatalf("the owners bucket was not made again: %v", err)
	}
	e, err := kv.Get(ctx, publish.MustTokens(evs[3].Group))
	if err != nil || !strings.Contains(string(e.Value()), evs[3].Owner.Node) {
		t.Fatalf("owner value after the bucket was made again: %v %v; want %s", e, err, evs[3].Owner.Node)
	}
}
