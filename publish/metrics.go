package publish

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the pipeline's Prometheus collectors.
type metrics struct {
	events    *prometheus.CounterVec   // herald_events_total{type,sink}
	latency   *prometheus.HistogramVec // herald_publish_seconds{sink}
	backlog   *prometheus.GaugeVec     // herald_backlog{sink}
	collapsed *prometheus.CounterVec   // herald_collapsed_events_total{sink}
	errors    *prometheus.CounterVec   // herald_sink_errors_total{sink}
	rejected  *prometheus.CounterVec   // herald_rejected_events_total{sink}
	dropped   *prometheus.CounterVec   // herald_events_dropped_total{sink}
	gaps      prometheus.Counter       // herald_gaps_total
	health    *healthGauge             // herald_sink_healthy{sink}
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_events_total",
			Help: "Events a sink acknowledged, by type.",
		}, []string{"type", "sink"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_publish_seconds",
			Help:    "Time from an event's observation (its Time) to the sink's acknowledgment.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}, []string{"sink"}),
		backlog: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "herald_backlog",
			Help: "Events waiting for a sink, including the batch being written.",
		}, []string{"sink"}),
		collapsed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_collapsed_events_total",
			Help: "Events dropped from a full backlog because a newer event of the same group supersedes them.",
		}, []string{"sink"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_sink_errors_total",
			Help: "Failed Connect or Write calls; each is retried.",
		}, []string{"sink"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_rejected_events_total",
			Help: "Events a sink refused for good (e.g. larger than the server accepts); dropped from that sink only.",
		}, []string{"sink"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_events_dropped_total",
			Help: "Events a sink had still to write when the bridge stopped publishing (an HA bridge deposed): the active bridge publishes them.",
		}, []string{"sink"}),
		gaps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_gaps_total",
			Help: "Events published with gap=true: the observer could not prove it saw every owner.",
		}),
		health: &healthGauge{desc: prometheus.NewDesc("herald_sink_healthy",
			"1 while a sink can deliver: its connection is up (for sinks that can tell), no Connect or Write failed since it last stored events, and its backlog is within its bound; else 0.",
			[]string{"sink"}, nil)},
	}
	for _, c := range []prometheus.Collector{m.events, m.latency, m.backlog, m.collapsed, m.errors, m.rejected, m.dropped, m.gaps, m.health} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("%w: herald metrics already registered on this Registerer: give each pipeline its own (%v)", ErrBadOption, err)
			}
			return nil, fmt.Errorf("publish: register metrics: %w", err)
		}
	}
	return m, nil
}

// laneCounters mirror the metrics of one sink for Stats.
type laneCounters struct {
	delivered atomic.Int64
	collapsed atomic.Int64
	errors    atomic.Int64
	rejected  atomic.Int64
	dropped   atomic.Int64 // dropped when the caller stopped publishing (Pause)
	connected atomic.Bool
	// failing is set by a failed Connect or Write and cleared when the
	// sink stores events again.
	failing atomic.Bool
	lastErr atomic.Pointer[string]
}

// Stats is a snapshot of the pipeline's numbers, the same the metrics show.
type Stats struct {
	// Published counts events accepted by Publish.
	Published int64
	// Gaps counts accepted events with Gap=true (herald_gaps_total).
	Gaps int64
	// Sinks holds each sink's numbers by name.
	Sinks map[string]SinkStats
}

// SinkStats are one sink's numbers.
type SinkStats struct {
	Delivered int64 // events acknowledged (herald_events_total summed over types)
	Backlog   int   // events not yet acknowledged (herald_backlog)
	Collapsed int64 // events dropped by collapsing (herald_collapsed_events_total)
	Errors    int64 // failed Connect/Write calls (herald_sink_errors_total)
	Rejected  int64 // events the sink refused for good (herald_rejected_events_total)
	// Dropped: events left for the active bridge to publish when the
	// caller stopped publishing (Pause): deposed, it writes them nowhere.
	Dropped   int64
	Bound     int  // the backlog bound (0 for a lossless sink)
	Connected bool // the last Connect succeeded and no Write failed since
	// Failing: a Connect or Write failed and the sink stored nothing since.
	// A Connect that succeeds does not clear it: a NATS connection that
	// is reconnecting connects at once and still cannot deliver.
	Failing bool
	// Down: the sink says its connection is down right now (ConnState),
	// whether or not it had anything to write.
	Down      bool
	LastError string
}

// Healthy reports whether the sink can deliver: it is not failing, does
// not say its connection is down, and its backlog is within its bound.
// What a /readyz check wants. A sink not tried yet counts as healthy
// unless it says its connection is down.
func (s SinkStats) Healthy() bool {
	return !s.Failing && !s.Down && (s.Bound == 0 || s.Backlog < s.Bound)
}

// Stats returns the pipeline's current numbers.
func (p *Pipeline) Stats() Stats {
	st := Stats{Published: p.published.Load(), Gaps: p.gaps.Load(), Sinks: make(map[string]SinkStats, len(p.lanes))}
	for _, l := range p.lanes {
		st.Sinks[l.name] = l.stats()
	}
	return st
}

// stats are the lane's numbers.
func (l *lane) stats() SinkStats {
	ss := SinkStats{
		Delivered: l.c.delivered.Load(),
		Backlog:   l.size(),
		Collapsed: l.c.collapsed.Load(),
		Errors:    l.c.errors.Load(),
		Rejected:  l.c.rejected.Load(),
		Dropped:   l.c.dropped.Load(),
		Connected: l.c.connected.Load(),
		Failing:   l.c.failing.Load(),
	}
	if cs, ok := l.sink.(ConnState); ok {
		ss.Down = !cs.Connected()
	}
	if !l.lossless {
		ss.Bound = l.bound
	}
	if e := l.c.lastErr.Load(); e != nil {
		ss.LastError = *e
	}
	return ss
}

// healthGauge is herald_sink_healthy, read from the lanes when scraped so
// that it follows a connection that drops while nothing is written.
type healthGauge struct {
	desc  *prometheus.Desc
	lanes []*lane // set once by New, before the pipeline is shared
}

func (h *healthGauge) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

func (h *healthGauge) Collect(ch chan<- prometheus.Metric) {
	for _, l := range h.lanes {
		v := 0.0
		if l.stats().Healthy() {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(h.desc, prometheus.GaugeValue, v, l.name)
	}
}
