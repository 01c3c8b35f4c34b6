package kafkasink

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"
)

// client builds a kafka-go transport with the configured SASL and TLS, and
// a client on it.
func (c Config) client() (*kafka.Client, *kafka.Transport, error) {
	mech, err := c.mechanism()
	if err != nil {
		// Not %w: the SCRAM library's error quotes the password.
		return nil, nil, fmt.Errorf("%w: SASL %s: the password cannot be used (its error would quote it; check it for line breaks, tabs and other control characters)", ErrBadConfig, c.SASL)
	}
	tc, err := c.tlsConfig()
	if err != nil {
		return nil, nil, err
	}
	tr := &kafka.Transport{
		ClientID:    c.ClientID,
		DialTimeout: 5 * time.Second,
		MetadataTTL: 5 * time.Second,
		SASL:        mech,
		TLS:         tc,
	}
	return &kafka.Client{Addr: kafka.TCP(c.Brokers...), Transport: tr, Timeout: c.WriteTimeout}, tr, nil
}

// withClusterBrokers is c with the brokers the cluster's metadata names
// added after c.Brokers: a follower's partition reads then find their
// leaders through another broker while the ones given are down, as the
// sink does (Sink.brokers). Unchanged when the metadata cannot be read.
func (c Config) withClusterBrokers(ctx context.Context, topic string) Config {
	cl, tr, err := c.client()
	if err != nil {
		return c
	}
	defer tr.CloseIdleConnections()
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return c
	}
	c.Brokers = withBrokers(c.Brokers, brokerAddrs(md.Brokers))
	return c
}

// brokerAddrs are the host:port addresses of the brokers a metadata
// answer names, sorted.
func brokerAddrs(bs []kafka.Broker) []string {
	addrs := make([]string, 0, len(bs))
	for _, b := range bs {
		if b.Host != "" && b.Port > 0 {
			addrs = append(addrs, net.JoinHostPort(b.Host, strconv.Itoa(b.Port)))
		}
	}
	slices.Sort(addrs)
	return addrs
}

// withBrokers is given, then those of more it does not hold already.
func withBrokers(given, more []string) []string {
	out := append([]string(nil), given...)
	for _, b := range more {
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// describe says how we connect, for errors: brokers, SASL user, TLS; never
// the password.
func (c Config) describe() string {
	s := fmt.Sprintf("brokers %v", c.Brokers)
	if c.SASL != nil {
		s += " with SASL " + c.SASL.String()
	}
	if c.TLS != nil {
		s += " over TLS"
	}
	return s
}

func classify(c Config, err error) error {
	var op *net.OpError
	var alert tls.AlertError
	var unknownCA x509.UnknownAuthorityError
	var verify *tls.CertificateVerificationError
	var hostname x509.HostnameError
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &verify), errors.As(err, &hostname):
		return fmt.Errorf("%w: %s: %w: the brokers' certificate does not check out: give the CA that signed it (TLS.CAFile, herald's --kafka-ca), and TLS.ServerName if the address is not in it",
			ErrTLS, c.describe(), err)
	case remoteAlert(err, "certificate required", "bad certificate", "unknown certificate authority"):
		return fmt.Errorf("%w: %s: %w: the brokers want a client certificate they trust: give one (TLS.CertFile and TLS.KeyFile, herald's --kafka-cert and --kafka-key)",
			ErrTLS, c.describe(), err)
	case errors.As(err, &alert), remoteAlert(err):
		return fmt.Errorf("%w: %s: %w: check the TLS settings against the brokers'", ErrTLS, c.describe(), err)
	case c.TLS == nil && c.SASL == nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)):
		// A TLS listener hangs up on a plain-text request.
		return fmt.Errorf("%w: %s: the broker hung up at once (%w): if it only accepts TLS, turn TLS on (Config.TLS, herald's --kafka-tls); if it asks for SASL, give the mechanism and credentials (Config.SASL, herald's --kafka-sasl, --kafka-user and --kafka-password-file); otherwise check that the address is a Kafka listener",
			ErrUnreachable, c.describe(), err)
	case errors.Is(err, kafka.SASLAuthenticationFailed), errors.Is(err, kafka.UnsupportedSASLMechanism),
		errors.Is(err, kafka.IllegalSASLState):
		return fmt.Errorf("%w: %s: %w: check the user name, password and mechanism", ErrAuth, c.describe(), err)
	case c.SASL != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)):
		// Brokers may simply hang up on bad credentials; with SASL on,
		// that is the likely reason for a reachable broker to hang up.
		return fmt.Errorf("%w: %s: the broker hung up, most likely refusing the credentials (%w): check the user name, password and mechanism",
			ErrAuth, c.describe(), err)
	case errors.As(err, &op), errors.Is(err, io.EOF), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %s: %w: check the addresses and that Kafka is running", ErrUnreachable, c.describe(), err)
	}
	return fmt.Errorf("kafkasink: %s: %w", c.describe(), err)
}

// remoteAlert reports whether err is a TLS alert the broker sent (crypto/tls
// reports those as a net.OpError "remote error"), and, given texts, one of
// them.
func remoteAlert(err error, texts ...string) bool {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "remote error" || op.Err == nil {
		return false
	}
	if len(texts) == 0 {
		return true
	}
	msg := op.Err.Error()
	for _, t := range texts {
		if strings.Contains(msg, t) {
			return true
		}
	}
	return false
}

func (c Config) dialer() *kafka.Dialer {
	mech, _ := c.mechanism() // validated by Validate
	tc, _ := c.tlsConfig()   // validated by New / follow
	return &kafka.Dialer{ClientID: c.ClientID, Timeout: 5 * time.Second, DualStack: true, SASLMechanism: mech, TLS: tc}
}

// partitionsAndEnds returns the partitions to read (all, or the one a group
// hashes to with c.Partitioner) and, per partition, the end offset at this moment (0 when the
// partition holds nothing to catch up on).
// errNoPartitions: the topic is not there (or not yet).
var errNoPartitions = errors.New("no such topic")

func partitionsAndEnds(ctx context.Context, c Config, topic, group string) ([]int, map[int]int64, error) {
	parts, offs, err := partitionOffsets(ctx, c, topic, group)
	if err != nil {
		return nil, nil, err
	}
	ends := map[int]int64{}
	for _, po := range offs {
		if po.LastOffset > po.FirstOffset {
			ends[po.Partition] = po.LastOffset
		}
	}
	return parts, ends, nil
}

// EventsTrimmed reports whether the events topic (c.EventsTopic) no
// longer holds its oldest records: a partition read (all, or the one
// group's events go to) starts above offset 0, its retention (or a
// deletion of records) having dropped what came first. A history read
// from it may lack a group's first events.
func EventsTrimmed(ctx context.Context, c Config, group string) (bool, error) {
	c = c.withDefaults()
	_, offs, err := partitionOffsets(ctx, c, c.EventsTopic, group)
	if err != nil {
		return false, err
	}
	for _, po := range offs {
		if po.FirstOffset > 0 {
			return true, nil
		}
	}
	return false, nil
}

// EventsStarts returns, per partition of the events topic read (all, or
// the one group's events go to), the offset of its oldest record now:
// the records below it were dropped (retention, a deletion of records).
func EventsStarts(ctx context.Context, c Config, group string) (map[int]int64, error) {
	c = c.withDefaults()
	_, offs, err := partitionOffsets(ctx, c, c.EventsTopic, group)
	if err != nil {
		return nil, err
	}
	starts := make(map[int]int64, len(offs))
	for _, po := range offs {
		starts[po.Partition] = po.FirstOffset
	}
	return starts, nil
}

// EventsCompacted reports whether the events topic (c.EventsTopic)
// compacts (cleanup.policy holds compact): compaction keeps each group's
// latest record and drops the ones before it, while the partitions still
// start at offset 0, so EventsTrimmed cannot see it. herald makes the
// topic to delete by age; one made or altered by hand may compact.
func EventsCompacted(ctx context.Context, c Config) (bool, error) {
	c = c.withDefaults()
	if _, err := c.tlsConfig(); err != nil {
		return false, err
	}
	cl, tr, err := c.client()
	if err != nil {
		return false, err
	}
	defer tr.CloseIdleConnections()
	res, err := cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: c.EventsTopic, ConfigNames: []string{"cleanup.policy"},
	}}})
	if err != nil {
		return false, classify(c, err)
	}
	for _, r := range res.Resources {
		if r.Error != nil {
			return false, fmt.Errorf("%w: describe configs of %s: %w", ErrTopic, c.EventsTopic, r.Error)
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName == "cleanup.policy" && strings.Contains(e.ConfigValue, "compact") {
				return true, nil
			}
		}
	}
	return false, nil
}

// partitionOffsets returns the partitions to read (all, or the one a
// group hashes to with c.Partitioner) and where each begins and ends.
func partitionOffsets(ctx context.Context, c Config, topic, group string) ([]int, []kafka.PartitionOffsets, error) {
	if _, err := c.tlsConfig(); err != nil {
		return nil, nil, err
	}
	cl, tr, err := c.client()
	if err != nil {
		return nil, nil, err
	}
	defer tr.CloseIdleConnections()
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, nil, classify(c, err)
	}
	var all []int
	for _, t := range md.Topics {
		if t.Name != topic {
			continue
		}
		if errors.Is(t.Error, kafka.UnknownTopicOrPartition) {
			return nil, nil, fmt.Errorf("%w: %s does not exist on %s: a herald bridge with --kafka makes it when it starts; start one, or check --kafka and the topic flags: %w", ErrTopic, topic, c.describe(), t.Error)
		}
		if t.Error != nil {
			return nil, nil, fmt.Errorf("%w: %s on %s: %w", ErrTopic, topic, c.describe(), t.Error)
		}
		for _, p := range t.Partitions {
			all = append(all, p.ID)
		}
	}
	if len(all) == 0 {
		return nil, nil, fmt.Errorf("%w: %w: %s has no partitions on %s: has a herald bridge connected yet?", ErrTopic, errNoPartitions, topic, c.describe())
	}
	sort.Ints(all)
	parts := all
	if group != "" {
		// The writer numbers partitions 0..n-1 and asks the same
		// partitioner (see Partitioner.balancer).
		parts = []int{c.Partitioner.PartitionOf(group, len(all))}
	}
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{}}
	for _, p := range parts {
		req.Topics[topic] = append(req.Topics[topic], kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
	}
	res, err := cl.ListOffsets(ctx, req)
	if err != nil {
		return nil, nil, classify(c, err)
	}
	for _, po := range res.Topics[topic] {
		if po.Error != nil {
			return nil, nil, fmt.Errorf("%w: list offsets of %s partition %d: %w", ErrTopic, topic, po.Partition, po.Error)
		}
	}
	return parts, res.Topics[topic], nil
}
