package audit

import (
	"fmt"
	"log/slog"
)

// DefaultMaxSize is the size past which the log rotates unless MaxSize says
// otherwise.
const DefaultMaxSize = 64 << 20

type options struct {
	maxSize int64
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
