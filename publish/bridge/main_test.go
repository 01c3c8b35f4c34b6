package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/heraldtest"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

func TestMain(m *testing.M) {
	heraldtest.Main(m, nil,
		// nats-server keeps a few process-wide goroutines.
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*Server).startGoRoutine"),
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*Server).updateVarzRuntimeFields"),
	)
}

// groupPath returns a path no other test uses.
func groupPath(t testing.TB) string { return heraldtest.Path(t, "/t") }

func ctxT(t testing.TB, d time.Duration) context.Context { return heraldtest.Ctx(t, d) }

func zkAddrs(t testing.TB) []string { return zktest.Shared(t).Addrs() }

func session(t testing.TB, servers []string) *elect.Session {
	t.Helper()
	return heraldtest.Session(t, servers)
}

// jsSink is a JetStream sink on url. Its publishes reach core subscribers
// too, so tests subscribe with plain NATS.
func jsSink(t testing.TB, url string) publish.Sink {
	t.Helper()
	s, err := jetstream.New(jetstream.Config{Conn: natssink.Options{URL: url, Name: t.Name()}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// running is a bridge started by start.
type running struct {
	*bridge.Bridge
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// stop cancels the bridge and returns Run's result.
func (r *running) stop(t testing.TB) error {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatal("bridge did not stop within 30s of cancel")
	}
	return r.err
}

// wait waits for Run to return by itself.
func (r *running) wait(t testing.TB, d time.Duration) error {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(d):
		buf := make([]byte, 1<<20)
		t.Fatalf("bridge still running after %v; goroutines:\n%s", d, buf[:runtime.Stack(buf, true)])
	}
	return r.err
}

func start(t testing.TB, cfg bridge.Config) *running {
	t.Helper()
	if cfg.Logger == nil && testing.Verbose() {
		cfg.Logger = testLogger(t)
	}
	b, err := bridge.New(cfg)
	if err != nil {
		t.Fatalf("bridge.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Bridge: b, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = b.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			buf := make([]byte, 1<<20)
			t.Errorf("bridge did not stop within 30s of cancel; goroutines:\n%s", buf[:runtime.Stack(buf, true)])
		}
	})
	return r
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not ordering
	}
}

func waitStatus(t testing.TB, b *bridge.Bridge, d time.Duration, what string, cond func(bridge.Status) bool) bridge.Status {
	t.Helper()
	var st bridge.Status
	waitFor(t, d, what, func() bool { st = b.Status(); return cond(st) })
	return st
}

// collector gathers the events published on a NATS subject.
type collector struct {
	mu     sync.Mutex
	events []publish.Event
	bad    []error
}

func collect(t testing.TB, url, subject string) *collector {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect to NATS %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	c := &collector{}
	_, err = nc.Subscribe(subject, func(m *nats.Msg) {
		e, err := natssink.Decode(m)
		c.mu.Lock()
		defer c.mu.Unlock()
		if err != nil {
			c.bad = append(c.bad, fmt.Errorf("%s: %w", m.Subject, err))
			return
		}
		c.events = append(c.events, e)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, err := range c.bad {
			t.Errorf("undecodable message: %v", err)
		}
	})
	return c
}

func (c *collector) all() []publish.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]publish.Event(nil), c.events...)
}

// count counts the events matching f.
func (c *collector) count(f func(publish.Event) bool) int {
	n := 0
	for _, e := range c.all() {
		if f(e) {
			n++
		}
	}
	return n
}

func (c *collector) waitCount(t testing.TB, d time.Duration, what string, n int, f func(publish.Event) bool) {
	t.Helper()
	waitFor(t, d, what, func() bool { return c.count(f) >= n })
}

func isType(typ publish.Type, node string) func(publish.Event) bool {
	return func(e publish.Event) bool {
		var p *publish.Participant
		switch {
		case typ == publish.CandidateJoined || typ == publish.CandidateLeft:
			p = e.Candidate
		case typ.Loses():
			p = e.Previous
		default:
			p = e.Owner
		}
		return e.Type == typ && p != nil && p.Node == node
	}
}

func idOf(group, node string, typ publish.Type) string { return publish.MakeID(group, node, typ) }

// candidate campaigns in group; the handle arrives on the channel once it
// leads (or nil when the campaign failed, e.g. at the test's end).
func candidate(t testing.TB, s *elect.Session, group, id string) <-chan *elect.Handle {
	t.Helper()
	el, err := elect.NewElection(s, group, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan *elect.Handle, 1)
	go func() {
		h, err := el.Campaign(context.Background(), id)
		if err != nil {
			out <- nil
			return
		}
		out <- h
	}()
	return out
}

func leads(t testing.TB, ch <-chan *elect.Handle) *elect.Handle {
	t.Helper()
	select {
	case h := <-ch:
		if h == nil {
			t.Fatal("campaign failed")
		}
		return h
	case <-time.After(20 * time.Second):
		t.Fatal("candidate did not become leader within 20s")
	}
	return nil
}

// queued waits until group has n participants and returns them.
func queued(t testing.TB, s *elect.Session, group string, n int) []elect.Participant {
	t.Helper()
	var ps []elect.Participant
	waitFor(t, 10*time.Second, fmt.Sprintf("%d participants in %s", n, group), func() bool {
		v, err := elect.ReadGroup(context.Background(), s, group)
		ps = v.Queue
		return err == nil && len(v.Queue) == n
	})
	return ps
}

// get fetches path from h and returns the status code and body.
func get(t testing.TB, h http.Handler, path string) (int, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// metric returns the value line of a metric without labels, e.g.
// "herald_bridge_active 1".
func metric(t testing.TB, h http.Handler, name string) string {
	t.Helper()
	_, body := get(t, h, "/metrics")
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	return ""
}

func natsURL(t testing.TB) string { return natsserver.Start(t).URL() }

func isErr(err, target error) bool { return errors.Is(err, target) }

// deleteTree removes path and everything below it.
func deleteTree(t testing.TB, s *elect.Session, path string) {
	t.Helper()
	children, _, err := s.Conn().Children(path)
	if err != nil {
		t.Fatalf("list %s: %v", path, err)
	}
	for _, c := range children {
		deleteTree(t, s, path+"/"+c)
	}
	if err := s.Conn().Delete(path, -1); err != nil {
		t.Fatalf("delete %s: %v", path, err)
	}
}

func natsserverStart(t testing.TB) *natsserver.Server { return natsserver.Start(t) }
