package jetstream

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/natssink"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrConfig wraps every error about a bad Config.
	ErrConfig = errors.New("jetstream: bad configuration")
	// ErrClosed is returned by Write after Close.
	ErrClosed = errors.New("jetstream: sink is closed")
	// ErrNotStored wraps a publish the server did not acknowledge.
	ErrNotStored = errors.New("jetstream: event not stored")
	// ErrReplicas wraps a refusal to create the stream or a bucket with
	// the configured Replicas: the server is not clustered, or the cluster
	// has fewer JetStream servers than copies asked for.
	ErrReplicas = errors.New("jetstream: too few servers for the replicas asked for")
	// ErrConflict is returned when the owners bucket kept changing under a
	// write (another bridge writing the same group) longer than the retries.
	ErrConflict = errors.New("jetstream: owners bucket kept changing")
)

// Defaults.
const (
	DefaultStream = "HERALD"
	DefaultBucket = "herald_owners"
	// DefaultBridgesBucket holds the bridges' heartbeats.
	DefaultBridgesBucket = "herald_bridges"
	DefaultDuplicates    = 2 * time.Minute
)

// Config says where the JetStream sink writes.
type Config struct {
	// Conn is how to reach NATS (shared with the NATS core sink).
	Conn natssink.Options
	// Stream is the stream holding every event, on herald.> (default HERALD).
	Stream string
	// Bucket is the KV bucket holding each group's current owner (default
	// herald_owners).
	Bucket string
	// BridgesBucket is the KV bucket holding each bridge's heartbeat
	// (publish.Heartbeat, key publish.BridgeKey of its source), which says
	// whether the owners it wrote are still confirmed (default
	// herald_bridges). The sink creates it on its first heartbeat.
	BridgesBucket string
	// Duplicates is the stream's de-duplication window: an event re-published
	// with the same id within it is stored once (default 2 minutes).
	Duplicates time.Duration
	// Replicas of the stream and buckets herald creates (default 1): how
	// many servers of a NATS cluster keep a copy. With 3, the stream and
	// the owners go on, and lose nothing, while one server is down; with 5,
	// while two are. More than 1 needs a clustered JetStream with at least
	// that many servers (Connect says so otherwise).
	Replicas int
	// MaxAge drops events older than this from the stream (0: keep all).
	MaxAge time.Duration
	// MaxBytes bounds the stream's size; the oldest events go first (0:
	// unbounded). Replicas, MaxAge and MaxBytes apply when herald creates
	// the stream; an existing stream is used as its operator configured
	// it (see Sink.Connect).
	MaxBytes int64
	// History is how many values per group the bucket keeps (default 1).
	History uint8
	// AckTimeout bounds a Write whose context has no deadline (default:
	// Conn.Timeout or 10s). Within it, what the server did not acknowledge
	// (a stream changing leader on a cluster, a client moving to another
	// server) is sent again, each attempt waiting up to a second.
	AckTimeout time.Duration
}

// Validate reports what is wrong with c.
func (c Config) Validate() error {
	if err := c.Conn.Validate(); err != nil {
		return err
	}
	if c.Stream != "" && !validName(c.Stream) {
		return fmt.Errorf("%w: stream name %q may hold only letters, digits, '_' and '-'", ErrConfig, c.Stream)
	}
	if c.Bucket != "" && !validName(c.Bucket) {
		return fmt.Errorf("%w: bucket name %q may hold only letters, digits, '_' and '-'", ErrConfig, c.Bucket)
	}
	if c.BridgesBucket != "" && !validName(c.BridgesBucket) {
		return fmt.Errorf("%w: bridges bucket name %q may hold only letters, digits, '_' and '-'", ErrConfig, c.BridgesBucket)
	}
	if d := c.withDefaults(); d.BridgesBucket == d.Bucket {
		return fmt.Errorf("%w: the owners and the bridges' heartbeats both in bucket %q: give them different buckets", ErrConfig, d.Bucket)
	}
	if c.Duplicates < 0 || c.MaxAge < 0 || c.AckTimeout < 0 || c.MaxBytes < 0 {
		return fmt.Errorf("%w: Duplicates, MaxAge, MaxBytes and AckTimeout must not be negative", ErrConfig)
	}
	if c.MaxAge > 0 && c.Duplicates > c.MaxAge {
		return fmt.Errorf("%w: duplicate window %s is longer than MaxAge %s; shorten it or keep events longer", ErrConfig, c.Duplicates, c.MaxAge)
	}
	if c.Replicas < 0 || c.Replicas > 5 {
		return fmt.Errorf("%w: replicas %d outside 1..5 (0 means 1)", ErrConfig, c.Replicas)
	}
	if c.History > 64 {
		return fmt.Errorf("%w: KV history %d above JetStream's limit of 64", ErrConfig, c.History)
	}
	return nil
}

func validName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (c Config) withDefaults() Config {
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
	if c.Bucket == "" {
		c.Bucket = DefaultBucket
	}
	if c.BridgesBucket == "" {
		c.BridgesBucket = DefaultBridgesBucket
	}
	if c.Duplicates == 0 {
		c.Duplicates = DefaultDuplicates
		if c.MaxAge > 0 && c.MaxAge < c.Duplicates {
			c.Duplicates = c.MaxAge
		}
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.History == 0 {
		c.History = 1
	}
	if c.AckTimeout == 0 {
		c.AckTimeout = c.Conn.Timeout
		if c.AckTimeout == 0 {
			c.AckTimeout = 10 * time.Second
		}
	}
	return c
}

func (c Config) streamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        c.Stream,
		Description: "herald: every leadership and lock event",
		Subjects:    []string{publish.SubjectPrefix + ".>"},
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
		MaxAge:      c.MaxAge,
		MaxBytes:    maxBytes(c.MaxBytes),
		Duplicates:  c.Duplicates,
		AllowDirect: true,
	}
}

func (c Config) bucketConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      c.Bucket,
		Description: "herald: the current owner of every group, by group tokens",
		History:     c.History,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
	}
}

func (c Config) bridgesBucketConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      c.BridgesBucket,
		Description: "herald: each bridge's heartbeat, by source: whether the owners it wrote are still confirmed",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
	}
}

// maxBytes is a stream's byte limit: -1, JetStream's "unlimited", for 0.
func maxBytes(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}
