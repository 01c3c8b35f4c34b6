package publish

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestMetricsAndStatsAgree(t *testing.T) {
	reg := prometheus.NewRegistry()
	clk := &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 10, 0, time.UTC)}
	a, b := newMem("a"), newMem("b")
	b.failNext, b.failErr = 2, errors.New("flaky")
	p := start(t, []Sink{a, b}, WithRegisterer(reg), WithClock(clk), WithBackoff(time.Millisecond, time.Millisecond))
	evs := seq("/metrics/g", 10, clk.now.Add(-3*time.Second))
	evs[4].Gap = true
	if err := p.Publish(context.Background(), evs...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "both sinks drained", func() bool {
		st := p.Stats()
		return st.Sinks["a"].Delivered == 10 && st.Sinks["b"].Delivered == 10 && st.Sinks["b"].Backlog == 0
	})
	st := p.Stats()
	if st.Published != 10 || st.Gaps != 1 {
		t.Fatalf("stats %+v: want 10 published, 1 gap", st)
	}
	for _, c := range []struct {
		name, sink string
		want       float64
	}{
		{"herald_events_total", "a", 10},
		{"herald_events_total", "b", 10},
		{"herald_publish_seconds", "a", 10}, // sample count
		{"herald_backlog", "a", 0},
		{"herald_sink_errors_total", "a", 0},
		{"herald_sink_errors_total", "b", 2},
		{"herald_gaps_total", "", 1},
	} {
		if got := gathered(t, reg, c.name, c.sink); got != c.want {
			t.Errorf("%s{sink=%q} = %v, want %v", c.name, c.sink, got, c.want)
		}
	}
	// Latency is measured on the injected clock: every event is 3s old.
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "herald_publish_seconds" {
			for _, m := range mf.GetMetric() {
				if s := m.Histogram.GetSampleSum(); s != 30 {
					t.Errorf("publish_seconds sum %v, want 30 (10 events x 3s)", s)
				}
			}
		}
	}
	if sb := st.Sinks["b"]; sb.Errors != 2 || sb.LastError != "flaky" || !sb.Healthy() {
		t.Errorf("sink b stats %+v", sb)
	}
	if _, err := New([]Sink{newMem("c")}, WithRegisterer(reg)); !errors.Is(err, ErrBadOption) {
		t.Fatalf("second pipeline on one registry: %v, want ErrBadOption", err)
	}
}
