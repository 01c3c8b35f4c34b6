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
	nats  []string
	kafka []string
	// natsAuth and kafkaAuth are the connection flags every command shares
	// (connflags.go): the same as the bridge's.
	natsAuth  natsAuth
	kafkaAuth kafkaAuth
	secrets   []*secretFlag
}

func (sf *sourceFlags) addFlags(f *pflag.FlagSet) {
	f.StringSliceVar(&sf.nats, "nats", nil, "read from NATS JetStream at URL(s) (the bridge's stream and owners bucket)")
	f.StringSliceVar(&sf.kafka, "kafka", nil, "read from Kafka brokers host:port[,host:port...] (herald.events, herald.owners)")
	sf.secrets = append(sf.natsAuth.addFlags(f), sf.kafkaAuth.addFlags(f)...)
	addSecretFiles(f, sf.secrets)
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
	return sf.natsAuth.options(strings.Join(sf.nats, ","), "herald-cli", log)
}

// jetStream connects to NATS and returns its JetStream handle and a func
// that closes the connection.
func (sf *sourceFlags) jetStream(ctx context.Context, log *slog.Logger) (jetstream.JetStream, func(), error) {
	if err := readSecretFiles(sf.secrets); err != nil {
		return nil, nil, err
	}
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
	if err := readSecretFiles(sf.secrets); err != nil {
		return kafkasink.Config{}, err
	}
	cfg := kafkasink.Config{Brokers: sf.kafka, ClientID: "herald-cli", Logger: log}
	if err := sf.kafkaAuth.apply(&cfg); err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageErr("--kafka: %v", err)
	}
	return cfg, nil
}
