package jetstream

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/zkherald/herald/publish"
)

// FollowOption configures Follow and Events.
type FollowOption func(*followConfig) error

type followConfig struct {
	bucket, stream string
	bridgesBucket  string
	first, limit   time.Duration
	since          time.Time
	buffer         int
	follower       *publish.Follower
	raw            bool
	log            *slog.Logger
}

func newFollowConfig(opts []FollowOption) (followConfig, error) {
	c := followConfig{bucket: DefaultBucket, stream: DefaultStream, bridgesBucket: DefaultBridgesBucket, first: 100 * time.Millisecond, limit: 5 * time.Second, buffer: 64}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// FromBucket reads owners from bucket instead of herald_owners.
func FromBucket(bucket string) FollowOption {
	return func(c *followConfig) error {
		if bucket == "" || !validName(bucket) {
			return fmt.Errorf("%w: bucket name %q may hold only letters, digits, '_' and '-'", ErrConfig, bucket)
		}
		c.bucket = bucket
		return nil
	}
}

// FromBridgesBucket makes Follow read the bridges' heartbeats from bucket
// instead of herald_bridges.
func FromBridgesBucket(bucket string) FollowOption {
	return func(c *followConfig) error {
		if bucket == "" || !validName(bucket) {
			return fmt.Errorf("%w: bucket name %q may hold only letters, digits, '_' and '-'", ErrConfig, bucket)
		}
		c.bridgesBucket = bucket
		return nil
	}
}

// FromStream reads events from stream instead of HERALD.
func FromStream(stream string) FollowOption {
	return func(c *followConfig) error {
		if stream == "" || !validName(stream) {
			return fmt.Errorf("%w: stream name %q may hold only letters, digits, '_' and '-'", ErrConfig, stream)
		}
		c.stream = stream
		return nil
	}
}

// RetryBackoff sets how long to wait before re-establishing a watch or a
// consumer after it failed: first, doubling up to limit (default 100ms to
// 5s).
func RetryBackoff(first, limit time.Duration) FollowOption {
	return func(c *followConfig) error {
		if first <= 0 || limit < first {
			return fmt.Errorf("%w: retry backoff %s..%s: want 0 < first <= limit", ErrConfig, first, limit)
		}
		c.first, c.limit = first, limit
		return nil
	}
}

// Since makes Events start with the first event stored at or after t
// instead of the beginning of the stream.
func Since(t time.Time) FollowOption {
	return func(c *followConfig) error {
		if t.IsZero() {
			return fmt.Errorf("%w: Since needs a time; leave the option out to read from the start", ErrConfig)
		}
		c.since = t
		return nil
	}
}

// Buffer sets the capacity of the channel Follow and Events deliver on
// (default 64). Nothing is ever dropped: a full channel makes the reader
// wait.
func Buffer(n int) FollowOption {
	return func(c *followConfig) error {
		if n < 0 {
			return fmt.Errorf("%w: buffer %d is negative", ErrConfig, n)
		}
		c.buffer = n
		return nil
	}
}

// WithFollower makes Events judge events with f (to share one view of the
// owners with other sources, such as a Kafka consumer). By default Events
// uses a Follower of its own.
func WithFollower(f *publish.Follower) FollowOption {
	return func(c *followConfig) error {
		if f == nil {
			return fmt.Errorf("%w: WithFollower(nil)", ErrConfig)
		}
		c.follower = f
		return nil
	}
}

// Raw makes Events deliver every stored event, duplicates and stale ones
// included (for history views).
func Raw() FollowOption {
	return func(c *followConfig) error { c.raw = true; return nil }
}

// retry waits per attempt, doubling from first to limit.
type retry struct {
	first, limit, next time.Duration
}

func (r *retry) wait() time.Duration {
	if r.next == 0 {
		r.next = r.first
	}
	d := r.next
	r.next = min(r.next*2, r.limit)
	return d
}

func (r *retry) reset() { r.next = 0 }

// WithLogger makes Events log, once per outage, that it cannot read the
// stream (JetStream without a leader or quorum, the connection down) and
// goes on trying, and when it reads again: otherwise a reader that waits
// through an outage is silent, like one that has nothing to read.
func WithLogger(l *slog.Logger) FollowOption {
	return func(c *followConfig) error {
		c.log = l
		return nil
	}
}
