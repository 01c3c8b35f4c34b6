package kafkasink

import (
	"crypto/tls"
	"fmt"
	"github.com/xdg-go/stringprep"
	"log/slog"
	"strings"
	"time"

	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"

	"github.com/zkherald/herald/internal/pemtls"
)

// Default topic names and writer timings.
const (
	DefaultEventsTopic  = "herald.events"
	DefaultOwnersTopic  = "herald.owners"
	DefaultBridgesTopic = "herald.bridges"
	DefaultPartitions   = 3
	DefaultBatchTimeout = 5 * time.Millisecond
	DefaultWriteTimeout = 10 * time.Second
	// DefaultProbeInterval is how often a connected sink asks the brokers
	// whether they still answer (see Config.ProbeInterval).
	DefaultProbeInterval = 5 * time.Second
)

// The bounds of Config.ProbeInterval.
const (
	minProbeInterval = 100 * time.Millisecond
	maxProbeInterval = time.Minute
)

// SASL mechanisms, as Kafka spells them.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// Config says where the Kafka cluster is and how herald's topics look.
// The zero value plus Brokers is a working configuration.
type Config struct {
	// Brokers are bootstrap host:port addresses.
	Brokers []string
	// EventsTopic holds the history, keyed by group (default herald.events).
	EventsTopic string
	// OwnersTopic is compacted and holds each group's current owner
	// (default herald.owners).
	OwnersTopic string
	// BridgesTopic is compacted, with one partition, and holds each
	// bridge's heartbeat (publish.Heartbeat) keyed by its source: whether
	// the owners it wrote are still confirmed (default herald.bridges).
	// The sink creates it on its first heartbeat.
	BridgesTopic string
	// Partitions and ReplicationFactor are used when Connect creates a
	// missing topic. Partitions defaults to 3; ReplicationFactor 0 means
	// the broker's default.replication.factor. In production use 3
	// replicas with MinInSyncReplicas 2 (so RequireAll survives one broker
	// down) and enough partitions for the consumers' parallelism, e.g. 6.
	Partitions        int
	ReplicationFactor int
	// MinInSyncReplicas sets min.insync.replicas on created topics (0: the
	// broker's default).
	MinInSyncReplicas int
	// Partitioner maps keys to partitions: Murmur2 (the default, as the
	// Java client and kcat) or FNV1a (herald's placement before, for
	// multi-partition topics an older herald wrote). Readers of one group
	// must use the writer's.
	Partitioner Partitioner
	SASL        *SASL
	TLS         *TLS
	// ClientID names herald in the brokers' logs and quotas (default
	// "herald").
	ClientID string
	// BatchTimeout bounds how long the writer waits to fill a partition's
	// batch. Keep it small: kafka-go's default of one second would add a
	// second of latency to every leadership change.
	BatchTimeout time.Duration
	// WriteTimeout bounds one produce request (default 10 s).
	WriteTimeout time.Duration
	// ProbeInterval is how often the sink, from Connect to Close, asks
	// the brokers for their metadata on a connection of its own, so that
	// Connected (herald_sink_healthy, /readyz) turns false while no
	// broker answers even when nothing is written, and true again when
	// one does (default 5 s, from 100ms to 1m). A probe waits at most
	// ProbeInterval or 2 s, whichever is longer, for each broker.
	ProbeInterval time.Duration
	// Logger receives connection and topic notices (default slog.Default).
	Logger *slog.Logger
}

// SASL holds credentials. Its String and LogValue never show the password.
type SASL struct {
	Mechanism string // Plain, ScramSHA256 or ScramSHA512
	User      string
	Password  string
}

func (s SASL) String() string { return fmt.Sprintf("%s user %q", s.Mechanism, s.User) }

// LogValue keeps the password out of structured logs.
func (s SASL) LogValue() slog.Value {
	return slog.GroupValue(slog.String("mechanism", s.Mechanism), slog.String("user", s.User))
}

// TLS configures encrypted connections. Config, when set, is used as is;
// otherwise CAFile (PEM) replaces the system roots and CertFile/KeyFile
// (PEM) give a client certificate.
type TLS struct {
	CAFile, CertFile, KeyFile string
	ServerName                string
	Config                    *tls.Config
}

func (c Config) withDefaults() Config {
	if c.EventsTopic == "" {
		c.EventsTopic = DefaultEventsTopic
	}
	if c.OwnersTopic == "" {
		c.OwnersTopic = DefaultOwnersTopic
	}
	if c.BridgesTopic == "" {
		c.BridgesTopic = DefaultBridgesTopic
	}
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	c.Partitioner = c.Partitioner.orDefault()
	if c.ClientID == "" {
		c.ClientID = "herald"
	}
	if c.BatchTimeout == 0 {
		c.BatchTimeout = DefaultBatchTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = DefaultProbeInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// warnPlainInClear warns, once per sink or reader, that SASL PLAIN
// without TLS sends the password to every broker as written. Kafka allows
// it (a SASL_PLAINTEXT listener), so it is not refused.
func (c Config) warnPlainInClear() {
	if c.SASL != nil && c.SASL.Mechanism == Plain && c.TLS == nil {
		c.Logger.Warn("kafkasink: SASL PLAIN without TLS sends the password unencrypted to every broker; use TLS (--kafka-tls) or SCRAM",
			"user", c.SASL.User, "brokers", c.Brokers)
	}
}

// Validate reports what is wrong with the configuration.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, a...)...)
	}
	if len(c.Brokers) == 0 {
		return bad("no brokers: give at least one host:port, e.g. localhost:9092")
	}
	for _, b := range c.Brokers {
		if i := strings.LastIndexByte(b, ':'); i <= 0 || i == len(b)-1 {
			return bad("broker %q is not host:port", b)
		}
	}
	if c.EventsTopic != "" && c.EventsTopic == c.OwnersTopic {
		return bad("events and owners topics are both %q: the owners topic is compacted and must be separate", c.EventsTopic)
	}
	if d := c.withDefaults(); d.BridgesTopic == d.EventsTopic || d.BridgesTopic == d.OwnersTopic {
		return bad("the bridges topic %q is also the events or owners topic: give it a topic of its own", d.BridgesTopic)
	}
	if c.Partitions < 0 || c.ReplicationFactor < 0 || c.MinInSyncReplicas < 0 {
		return bad("partitions %d, replication factor %d, min.insync.replicas %d: none may be negative",
			c.Partitions, c.ReplicationFactor, c.MinInSyncReplicas)
	}
	if c.ReplicationFactor > 0 && c.MinInSyncReplicas > c.ReplicationFactor {
		return bad("min.insync.replicas %d exceeds the replication factor %d: no write could ever succeed with acks=all",
			c.MinInSyncReplicas, c.ReplicationFactor)
	}
	switch c.Partitioner {
	case "", Murmur2, FNV1a:
	default:
		return bad("partitioner %q: use %s (Java's default) or %s (herald's placement before murmur2 became the default)", c.Partitioner, Murmur2, FNV1a)
	}
	if c.BatchTimeout < 0 || c.WriteTimeout < 0 {
		return bad("negative timeout")
	}
	switch p := c.ProbeInterval; {
	case p < 0:
		return bad("probe interval %v is negative: give one from %v to %v, or 0 for the default %v", p, minProbeInterval, maxProbeInterval, DefaultProbeInterval)
	case p > 0 && p < minProbeInterval:
		return bad("probe interval %v would ask the brokers more than ten times a second: use at least %v (default %v)", p, minProbeInterval, DefaultProbeInterval)
	case p > maxProbeInterval:
		return bad("probe interval %v would leave an outage unnoticed that long: use at most %v (default %v)", p, maxProbeInterval, DefaultProbeInterval)
	}
	if c.BatchTimeout > time.Second/10 {
		return bad("batch timeout %v adds that much latency to every change; use at most 100ms", c.BatchTimeout)
	}
	if s := c.SASL; s != nil {
		switch s.Mechanism {
		case Plain, ScramSHA256, ScramSHA512:
		default:
			return bad("SASL mechanism %q: use %s, %s or %s", s.Mechanism, Plain, ScramSHA256, ScramSHA512)
		}
		if s.User == "" {
			return bad("SASL %s without a user name", s.Mechanism)
		}
		if s.Password == "" {
			return bad("SASL %s user %q without a password", s.Mechanism, s.User)
		}
		if s.Mechanism != Plain {
			// SCRAM prepares the password (SASLprep) and refuses some
			// characters; its own error quotes the password whole.
			if _, err := stringprep.SASLprep.Prepare(s.Password); err != nil {
				return bad("SASL %s: user %q's password holds a character SCRAM refuses (%v; a line break or tab, say, left by a file or an environment variable): write it without", s.Mechanism, s.User, err)
			}
		}
	}
	if t := c.TLS; t != nil && t.Config == nil && (t.CertFile == "") != (t.KeyFile == "") {
		return bad("TLS client certificate needs both CertFile and KeyFile")
	}
	return nil
}

func (c Config) mechanism() (sasl.Mechanism, error) {
	s := c.SASL
	if s == nil {
		return nil, nil
	}
	switch s.Mechanism {
	case Plain:
		return plain.Mechanism{Username: s.User, Password: s.Password}, nil
	case ScramSHA256:
		return scram.Mechanism(scram.SHA256, s.User, s.Password)
	default:
		return scram.Mechanism(scram.SHA512, s.User, s.Password)
	}
}

func (c Config) tlsConfig() (*tls.Config, error) {
	t := c.TLS
	if t == nil {
		return nil, nil
	}
	if t.Config != nil {
		return t.Config, nil
	}
	cfg, err := pemtls.ClientConfig(t.CAFile, t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	cfg.ServerName = t.ServerName
	return cfg, nil
}
