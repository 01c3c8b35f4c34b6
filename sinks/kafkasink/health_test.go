package kafkasink

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/sinktest"
)

// probeEvery is the probe interval of these tests. The bounds they wait
// are many times longer: the machine may be loaded.
const probeEvery = 200 * time.Millisecond

// logBuf is a log the sink writes while the test reads it.
type logBuf = sinktest.LogBuf

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	sinktest.WaitUntil(t, d, what, cond)
}

// probes counts the goroutines running the sink's probe.
func probes() int { return sinktest.Goroutines("kafkasink.(*Sink).watch(") }

// TestConnectedFollowsTheBrokers: an idle sink (nothing written after
// Connect) says it is not connected within a few probes of its broker
// stopping, with one WARN, and connected again once the broker is back on
// the same port, with one INFO; it writes then. Close stops the probe.
func TestConnectedFollowsTheBrokers(t *testing.T) {
	c := kafkatest.Start(t)
	var log logBuf
	cfg := testConfig(t, c)
	cfg.ProbeInterval = probeEvery
	cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if s.Connected() {
		t.Fatal("a sink never connected says it is connected")
	}
	before := probes()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if !s.Connected() {
		t.Fatal("a sink just connected says it is not")
	}
	// Several probes pass with the broker up: it stays connected.
	time.Sleep(5 * probeEvery) // letting probes run, not ordering
	if !s.Connected() {
		t.Fatalf("connected sink turned not connected with its broker up; log:\n%s", log.String())
	}

	c.Stop()
	waitUntil(t, 10*time.Second, "not connected with the broker stopped and nothing written", func() bool { return !s.Connected() })
	waitUntil(t, 5*time.Second, "the WARN", func() bool { return log.Count("WARN", "no broker answers") >= 1 })
	if w := log.String(); !strings.Contains(w, c.Addrs()[0]) || !strings.Contains(w, "check the addresses and that Kafka is running") {
		t.Errorf("the WARN does not name the broker and what to check:\n%s", w)
	}
	time.Sleep(5 * probeEvery) // more failed probes: still one WARN
	if n := log.Count("WARN", "no broker answers"); n != 1 || s.Connected() {
		t.Errorf("%d WARN lines over several failed probes, connected %v; want 1, false; log:\n%s", n, s.Connected(), log.String())
	}

	c.Restart(t)
	waitUntil(t, 10*time.Second, "connected once the broker is back", s.Connected)
	waitUntil(t, 5*time.Second, "the INFO", func() bool { return log.Count("INFO", "the brokers answer again") == 1 })
	// The writer left from before the outage may fail once; the
	// pipeline would reconnect, as here.
	evs := sinktest.Events("probe", 1, 2)
	if err := s.Write(ctx, evs); err != nil {
		if !errors.Is(err, publish.ErrReconnect) {
			t.Fatal(err)
		}
		if err := s.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, evs); err != nil {
			t.Fatal(err)
		}
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.Connected() {
		t.Error("a closed sink says it is connected")
	}
	waitUntil(t, 5*time.Second, "the probe gone after Close", func() bool { return probes() == before })
}

// A sink whose brokers are down at Connect says not connected, and
// connected once they answer, without another Connect: the pipeline's
// retry, waiting on Connected, starts then.
func TestConnectedAfterAFailedConnect(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := testConfig(t, c)
	cfg.ProbeInterval = probeEvery
	c.Stop()
	s, err := tryConnect(t, cfg, 3*time.Second)
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Connect with the broker down: %v, want ErrUnreachable", err)
	}
	if s.Connected() {
		t.Fatal("connected with the broker down")
	}
	c.Restart(t)
	waitUntil(t, 10*time.Second, "connected once the broker is up", s.Connected)
}

// TestHealthGaugeWhileIdle: through the pipeline, herald_sink_healthy for
// the Kafka sink reads 0 while its broker is stopped and nothing is
// written (no Write fails: the probe tells), and 1 again once it is back.
func TestHealthGaugeWhileIdle(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := testConfig(t, c)
	cfg.ProbeInterval = probeEvery
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	t.Cleanup(func() { _ = s.Close() })
	p := sinktest.RunPipeline(t, []publish.Sink{s}, publish.WithRegisterer(reg), publish.WithBackoff(10*time.Millisecond, 200*time.Millisecond))
	ctx := t.Context()
	stats := func() publish.SinkStats { return p.Stats().Sinks["kafka"] }
	if err := p.Publish(ctx, sinktest.Events(t.Name(), 1, 2)...); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "the events stored", func() bool { return stats().Delivered == 2 })
	if v := healthGauge(t, reg); v != 1 || !stats().Healthy() {
		t.Fatalf("herald_sink_healthy %v, stats %+v after storing: want 1, healthy", v, stats())
	}

	c.Stop()
	waitUntil(t, 10*time.Second, "herald_sink_healthy 0 with the broker stopped", func() bool { return healthGauge(t, reg) == 0 })
	if st := stats(); !st.Down || st.Failing || st.Errors != 0 || st.Backlog != 0 {
		t.Errorf("stats %+v: want down, with no write tried (not failing, no errors, nothing waiting)", st)
	}

	c.Restart(t)
	waitUntil(t, 10*time.Second, "herald_sink_healthy 1 with the broker back", func() bool { return healthGauge(t, reg) == 1 })
}

// healthGauge is herald_sink_healthy{sink="kafka"} as reg serves it.
func healthGauge(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	return sinktest.HealthGauge(t, reg, "kafka")
}

func TestProbeIntervalValidated(t *testing.T) {
	for _, d := range []time.Duration{-time.Second, time.Millisecond, 2 * time.Minute} {
		cfg := Config{Brokers: []string{"localhost:9092"}, ProbeInterval: d}
		if err := cfg.Validate(); !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "probe interval") {
			t.Errorf("ProbeInterval %v: %v, want ErrBadConfig naming the probe interval", d, err)
		}
	}
	for _, d := range []time.Duration{0, 100 * time.Millisecond, time.Minute} {
		if err := (Config{Brokers: []string{"localhost:9092"}, ProbeInterval: d}).Validate(); err != nil {
			t.Errorf("ProbeInterval %v: %v", d, err)
		}
	}
	if got := (Config{}).withDefaults().ProbeInterval; got != DefaultProbeInterval {
		t.Errorf("default probe interval %v, want %v", got, DefaultProbeInterval)
	}
}
