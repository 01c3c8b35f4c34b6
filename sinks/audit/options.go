package audit

import (
	"fmt"
	"log/slog"
	"time"
)

// DefaultMaxSize is the size past which the log rotates unless MaxSize says
// otherwise.
const DefaultMaxSize = 64 << 20

// DefaultProbeInterval is how often an open sink checks that its log can
// still be written, unless ProbeInterval says otherwise.
const DefaultProbeInterval = 5 * time.Second

// The bounds of ProbeInterval.
const (
	minProbeInterval = 100 * time.Millisecond
	maxProbeInterval = time.Minute
)

type options struct {
	maxSize int64
	probe   time.Duration
	log     *slog.Logger
}

// Option configures a Sink.
type Option func(*options) error

// MaxSize sets the size in bytes past which the log rotates. A batch is
// never split: a file exceeds the limit only when one batch alone does.
func MaxSize(n int64) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("%w: MaxSize(%d): the rotation size must be positive, e.g. 64<<20", ErrBadOption, n)
		}
		o.maxSize = n
		return nil
	}
}

// Logger sets where the sink reports recovery and rotation (default
// slog.Default()).
func Logger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("%w: Logger(nil): pass a logger, or omit the option for slog.Default()", ErrBadOption)
		}
		o.log = l
		return nil
	}
}

// ProbeInterval sets how often the sink, from Connect to Close, checks
// that its log can still be written (see Sink.Connected): from 100ms to
// 1m, default 5s.
func ProbeInterval(d time.Duration) Option {
	return func(o *options) error {
		if d < minProbeInterval || d > maxProbeInterval {
			return fmt.Errorf("%w: ProbeInterval(%v): give one from %v to %v (default %v): shorter churns the directory, longer leaves a broken one unnoticed",
				ErrBadOption, d, minProbeInterval, maxProbeInterval, DefaultProbeInterval)
		}
		o.probe = d
		return nil
	}
}
