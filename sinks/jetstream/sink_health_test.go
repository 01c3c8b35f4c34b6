package jetstream_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	hjs "github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/sinktest"
)

// logs is a log a pipeline and a sink write to while the test reads it.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// count is how many lines hold both level and msg.
func (l *logs) count(level, msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range strings.Split(l.buf.String(), "\n") {
		if strings.Contains(line, "level="+level) && strings.Contains(line, msg) {
			n++
		}
	}
	return n
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestUnhealthyWhileNATSIsDown: with its only NATS server down, a
// JetStream sink reads unhealthy on every look (Stats and
// herald_sink_healthy), first with nothing to write, then while its
// writes fail and its Connect finds the connection still reconnecting,
// with one WARN for the whole stretch; once the server is back it stores
// the backlog, reads healthy again and says so at INFO.
func TestUnhealthyWhileNATSIsDown(t *testing.T) {
	srv := natsserver.Start(t)
	var log logs
	logger := slog.New(slog.NewTextHandler(&log, nil))
	opts := fast(srv.URL())
	opts.Logger = logger
	sink := newSink(t, hjs.Config{Conn: opts})
	reg := prometheus.NewRegistry()
	p := sinktest.RunPipeline(t, []publish.Sink{sink}, publish.WithRegisterer(reg), publish.WithBackoff(10*time.Millisecond, 50*time.Millisecond), publish.WithLogger(logger))
	ctx := t.Context()
	stats := func() publish.SinkStats { return p.Stats().Sinks["jetstream"] }
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; stats %+v; log:\n%s", what, stats(), log.String())
			}
			time.Sleep(10 * time.Millisecond) // polling interval, not ordering
		}
	}

	evs := sinktest.Events(t.Name(), 2, 6)
	half := len(evs) / 2
	if err := p.Publish(ctx, evs[:half]...); err != nil {
		t.Fatal(err)
	}
	wait("the first half stored", func() bool { return stats().Delivered == int64(half) })
	if st := stats(); !st.Healthy() || healthy(t, reg) != 1 {
		t.Fatalf("sink that stores everything: stats %+v, herald_sink_healthy %v", st, healthy(t, reg))
	}

	// Down with nothing to write: no Write fails, and still it cannot
	// deliver.
	srv.Shutdown()
	wait("unhealthy with nothing to write", func() bool { return !stats().Healthy() })
	if v := healthy(t, reg); v != 0 {
		t.Errorf("herald_sink_healthy %v with the server down, want 0", v)
	}
	// The client's disconnect callback logs on its own goroutine, maybe
	// after the sink already reads unhealthy: wait for it, then count.
	wait("the WARN line for the lost connection", func() bool { return log.count("WARN", "disconnected from NATS") >= 1 })
	if n := log.count("WARN", "disconnected from NATS"); n != 1 {
		t.Errorf("%d WARN lines for the lost connection, want 1; log:\n%s", n, log.String())
	}

	// Down with events to write: every look, while Write fails and the
	// worker's Connect is retried, says unhealthy.
	if err := p.Publish(ctx, evs[half:]...); err != nil {
		t.Fatal(err)
	}
	for stats().Errors < 5 {
		if st := stats(); st.Healthy() {
			t.Fatalf("sink reads healthy with its server down: %+v", st)
		}
		if v := healthy(t, reg); v != 0 {
			t.Fatalf("herald_sink_healthy %v with the server down, want 0", v)
		}
		time.Sleep(2 * time.Millisecond) // sampling interval, not ordering
	}
	if st := stats(); !st.Failing || !strings.Contains(st.LastError, "reconnecting") {
		t.Errorf("stats %+v: want failing, the last error saying the connection is reconnecting", st)
	}
	if n := log.count("WARN", "sink cannot deliver"); n != 1 {
		t.Errorf("%d WARN lines for a sink failing %d times, want 1; log:\n%s", n, stats().Errors, log.String())
	}

	srv.Restart(t)
	wait("the backlog stored after the restart", func() bool { return stats().Delivered == int64(len(evs)) })
	if st := stats(); !st.Healthy() || st.Failing || healthy(t, reg) != 1 {
		t.Errorf("after the restart: stats %+v, herald_sink_healthy %v; want healthy", st, healthy(t, reg))
	}
	// Logged right after the events are counted as stored: wait for it.
	wait("the INFO line for the recovery", func() bool { return log.count("INFO", "sink delivers again") >= 1 })
	if n := log.count("INFO", "sink delivers again"); n != 1 {
		t.Errorf("%d INFO lines for the recovery, want 1; log:\n%s", n, log.String())
	}
}

// healthy is herald_sink_healthy{sink="jetstream"} as reg serves it.
func healthy(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	return sinktest.HealthGauge(t, reg, "jetstream")
}

// TestDeliversOnceNATSIsBack: the pipeline's retry waits grow while the
// server is down (to seconds here, 30s by default); once the connection is
// back the backlog is stored at once, not after the rest of the wait.
// About 15s: the waits must grow first.
func TestDeliversOnceNATSIsBack(t *testing.T) {
	srv := natsserver.Start(t)
	sink := newSink(t, hjs.Config{Conn: fast(srv.URL())})
	p := sinktest.RunPipeline(t, []publish.Sink{sink}, publish.WithBackoff(100*time.Millisecond, time.Minute))
	ctx := t.Context()
	stats := func() publish.SinkStats { return p.Stats().Sinks["jetstream"] }
	wait := func(d time.Duration, what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(d)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out after %v waiting for %s; stats %+v", d, what, stats())
			}
			time.Sleep(10 * time.Millisecond) // polling interval, not ordering
		}
	}
	evs := sinktest.Events(t.Name(), 1, 2)
	if err := p.Publish(ctx, evs[0]); err != nil {
		t.Fatal(err)
	}
	wait(10*time.Second, "the first event stored", func() bool { return stats().Delivered == 1 })

	srv.Shutdown()
	wait(10*time.Second, "the connection down", func() bool { return !sink.Connected() })
	if err := p.Publish(ctx, evs[1]); err != nil {
		t.Fatal(err)
	}
	// Eleven failures in a row: the next wait is 5.8s, give or take half.
	wait(40*time.Second, "eleven failed tries", func() bool { return stats().Errors >= 11 })
	srv.Restart(t)
	wait(10*time.Second, "the connection back", sink.Connected)
	back := time.Now()
	wait(10*time.Second, "the backlog stored", func() bool { return stats().Delivered == 2 })
	if d := time.Since(back); d > time.Second {
		t.Errorf("the backlog was stored %v after the connection came back, want within 1s", d.Round(time.Millisecond))
	}
}
