package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"

	"github.com/zkherald/herald/sinks/kafkasink"
	"github.com/zkherald/herald/sinks/natssink"
)

// sourceFlags says where who, tail and history read events and owners
// when they do not ask ZooKeeper: NATS (JetStream) or Kafka.
type sourceFlags struct {
	nats      []string
	natsCreds string
	kafka     []string
	// kafkaPartitioner finds a group's partition; it must be the
	// bridge's (--kafka-partitioner).
	kafkaPartitioner string
}

func (sf *sourceFlags) addFlags(f *pflag.FlagSet) {
	f.StringSliceVar(&sf.nats, "nats", nil, "read from NATS JetStream at URL(s) (the bridge's stream and owners bucket)")
	f.StringVar(&sf.natsCreds, "nats-creds", "", "NATS .creds file (JWT and seed) to log in with")
	f.StringSliceVar(&sf.kafka, "kafka", nil, "read from Kafka brokers host:port[,host:port...] (herald.events, herald.owners)")
	f.StringVar(&sf.kafkaPartitioner, "kafka-partitioner", string(kafkasink.DefaultPartitioner), "with --kafka, the bridge's --kafka-partitioner (murmur2 or fnv1a), to find a group's partition")
}

// which names the one source given; usage error for both.
func (sf *sourceFlags) which() (string, error) {
	switch {
	case len(sf.nats) > 0 && len(sf.kafka) > 0:
		return "", usageErr("give --nats or --kafka, not both")
	case len(sf.nats) > 0:
		return "nats", nil
	case len(sf.kafka) > 0:
		return "kafka", nil
	}
	return "", nil
}

func (sf *sourceFlags) natsOptions(log *slog.Logger) natssink.Options {
	return natssink.Options{URL: strings.Join(sf.nats, ","), Name: "herald-cli", CredsFile: sf.natsCreds, Logger: log}
}

// jetStream connects to NATS and returns its JetStream handle and a func
// that closes the connection.
func (sf *sourceFlags) jetStream(ctx context.Context, log *slog.Logger) (jetstream.JetStream, func(), error) {
	opts := sf.natsOptions(log)
	if err := opts.Validate(); err != nil {
		return nil, nil, usageErr("--nats: %v", err)
	}
	nc, err := opts.Dial(ctx)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("JetStream at %s: %w", natssink.Redact(opts.URL), err)
	}
	return js, nc.Close, nil
}

func (sf *sourceFlags) kafkaConfig(log *slog.Logger) (kafkasink.Config, error) {
	part, err := kafkasink.ParsePartitioner(sf.kafkaPartitioner)
	if err != nil {
		return kafkasink.Config{}, usageErr("--kafka-partitioner: %v", err)
	}
	cfg := kafkasink.Config{Brokers: sf.kafka, ClientID: "herald-cli", Logger: log, Partitioner: part}
	if err := cfg.Validate(); err != nil {
		return cfg, usageErr("--kafka: %v", err)
	}
	return cfg, nil
}
