package publish

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of the pipeline's options.
const (
	DefaultBatchSize      = 256
	DefaultBacklog        = 10000
	DefaultInitialBackoff = 100 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
	DefaultSource         = "herald"
)

// Clock is the pipeline's view of time: when events are stamped, how long
// delivery took, and how long to wait before a retry.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

type config struct {
	batchSize  int
	backlog    int
	lossless   map[string]bool
	reg        prometheus.Registerer
	clock      Clock
	initial    time.Duration
	maxBackoff time.Duration
	source     string
	log        *slog.Logger
	storeCheck time.Duration
	gate       func(context.Context) error
}

func defaults() config {
	return config{
		batchSize:  DefaultBatchSize,
		backlog:    DefaultBacklog,
		lossless:   map[string]bool{},
		clock:      SystemClock{},
		initial:    DefaultInitialBackoff,
		maxBackoff: DefaultMaxBackoff,
		source:     DefaultSource,
		storeCheck: DefaultStoreCheck,
	}
}

// Option configures a Pipeline. Options validate their arguments; New
// returns the first error, wrapping ErrBadOption.
type Option func(*config) error

// WithBatchSize sets the most events handed to one Sink.Write (default 256).
func WithBatchSize(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: batch size %d: give at least 1", ErrBadOption, n)
		}
		c.batchSize = n
		return nil
	}
}

// WithBacklog bounds each sink's pending events (default 10,000). When a
// sink's backlog reaches the bound, its pending events are collapsed per
// group (see doc.go); lossless sinks are exempt.
func WithBacklog(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: backlog bound %d: give at least 1", ErrBadOption, n)
		}
		c.backlog = n
		return nil
	}
}

// Lossless marks the named sink (by Sink.Name) as keeping every event: its
// backlog is never collapsed and grows without bound while the sink is
// down. Use it for the audit log, and watch herald_backlog for it.
func Lossless(name string) Option {
	return func(c *config) error {
		if name == "" {
			return fmt.Errorf("%w: Lossless needs a sink name (Sink.Name())", ErrBadOption)
		}
		c.lossless[name] = true
		return nil
	}
}

// WithRegisterer registers the pipeline's metrics on r. Without it they go
// to a registry of the pipeline's own, visible only through Stats.
func WithRegisterer(r prometheus.Registerer) Option {
	return func(c *config) error {
		if r == nil {
			return fmt.Errorf("%w: nil prometheus Registerer", ErrBadOption)
		}
		c.reg = r
		return nil
	}
}

// WithClock replaces the system clock (for tests).
func WithClock(clk Clock) Option {
	return func(c *config) error {
		if clk == nil {
			return fmt.Errorf("%w: nil Clock", ErrBadOption)
		}
		c.clock = clk
		return nil
	}
}

// WithBackoff sets the first and the longest wait between retries of a
// failing sink (default 100ms and 30s). Retries never stop: see doc.go.
func WithBackoff(initial, max time.Duration) Option {
	return func(c *config) error {
		if initial <= 0 || max < initial {
			return fmt.Errorf("%w: backoff %v..%v: need 0 < initial <= max", ErrBadOption, initial, max)
		}
		c.initial, c.maxBackoff = initial, max
		return nil
	}
}

// DefaultStoreCheck is how often an idle sink that keeps a store of
// current state is asked whether the store is still there (StoreChecker).
const DefaultStoreCheck = 5 * time.Second

// WithStoreCheck sets how often an idle StoreChecker sink is asked whether
// its store of current state is still there (default DefaultStoreCheck);
// 0 turns the look off, leaving a lost store to be found by the next
// write that fails.
func WithStoreCheck(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("%w: store check every %v: need 0 (off) or more", ErrBadOption, d)
		}
		c.storeCheck = d
		return nil
	}
}

// WithSource sets the source Consume stamps on the events it translates
// (default "herald"): name the bridge, e.g. "herald-bridge@host-1".
func WithSource(s string) Option {
	return func(c *config) error {
		if s == "" {
			return fmt.Errorf("%w: empty source: name the bridge or participant", ErrBadOption)
		}
		c.source = s
		return nil
	}
}

// WithLogger logs each sink's health as it changes: a WARN when a sink
// that delivered (or had not tried yet) fails a Connect or Write, once per
// stretch of failures, and an INFO when it stores events again. Without it
// the pipeline logs nothing; Stats and herald_sink_healthy say the same.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("%w: nil Logger", ErrBadOption)
		}
		c.log = l
		return nil
	}
}

// WithWriteGate has every write to a sink that is not Private wait until
// gate says yes (returns nil): an HA bridge's way to write only while it
// can prove it still leads, for instance after a freeze its ZooKeeper
// client has not noticed yet. While gate says no, the write waits (the
// sink is not counted as failing) and gate is asked again every 50 ms;
// when the caller stops publishing meanwhile (Pause), the write is
// dropped.
func WithWriteGate(gate func(ctx context.Context) error) Option {
	return func(c *config) error {
		if gate == nil {
			return fmt.Errorf("%w: nil write gate", ErrBadOption)
		}
		c.gate = gate
		return nil
	}
}
