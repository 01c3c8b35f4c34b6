package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/kafkasink"
	"github.com/zkherald/herald/sinks/natssink"
)

// sinks builds the sinks the flags ask for. With neither --nats nor
// --kafka it starts an embedded NATS server (stopped by the returned
// function) and tells out how to subscribe.
func (f *bridgeFlags) sinks(ctx context.Context, a *app, out io.Writer) (sinks []publish.Sink, lossless []string, stop func(), err error) {
	stop = func() {}
	url := f.nats
	if f.nats == "" && f.kafka == "" {
		var srvStop func()
		url, srvStop, err = f.embeddedNATS(ctx, a, out)
		if err != nil {
			return nil, nil, stop, err
		}
		stop = srvStop
	}
	fail := func(err error) ([]publish.Sink, []string, func(), error) {
		for _, s := range sinks {
			_ = s.Close()
		}
		stop()
		return nil, nil, func() {}, err
	}
	if url != "" {
		opts := f.natsAuth.options(url, "herald-bridge", a.log)
		if err := opts.Validate(); err != nil {
			return fail(usageErr("NATS options: %v", err))
		}
		var s publish.Sink
		if f.natsMode == "core" {
			s, err = natssink.New(opts)
		} else {
			s, err = jetstream.New(jetstream.Config{Conn: opts, Replicas: f.natsReplicas, MaxAge: f.natsMaxAge, MaxBytes: f.natsMaxBytes, Duplicates: f.natsDuplicates})
		}
		if err != nil {
			return fail(usageErr("NATS: %v", err))
		}
		sinks = append(sinks, s)
	}
	if f.kafka != "" {
		cfg := kafkasink.Config{
			Brokers: splitList(f.kafka), EventsTopic: f.kafkaEvents, OwnersTopic: f.kafkaOwners,
			Partitions: f.kafkaPartitions, ReplicationFactor: f.kafkaReplication,
			ClientID: "herald-bridge", Logger: a.log,
		}
		if err := f.kafkaAuth.apply(&cfg); err != nil {
			return fail(err)
		}
		if err := cfg.Validate(); err != nil {
			return fail(usageErr("Kafka options: %v", err))
		}
		s, err := kafkasink.New(cfg)
		if err != nil {
			return fail(usageErr("Kafka: %v", err))
		}
		sinks = append(sinks, s)
	}
	if f.audit != "" {
		s, err := audit.New(f.audit, audit.Logger(a.log))
		if err != nil {
			return fail(usageErr("--audit %q: %v", f.audit, err))
		}
		sinks = append(sinks, s)
		lossless = append(lossless, s.Name())
	}
	return sinks, lossless, stop, nil
}

// embeddedNATS starts the embedded NATS server with JetStream and prints
// how to subscribe.
func (f *bridgeFlags) embeddedNATS(ctx context.Context, a *app, out io.Writer) (string, func(), error) {
	host, portStr, err := net.SplitHostPort(f.natsListen)
	if err != nil {
		return "", nil, usageErr("--nats-listen %q: want host:port (%v)", f.natsListen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return "", nil, usageErr("--nats-listen %q: bad port %q", f.natsListen, portStr)
	}
	dir := f.natsStore
	if dir == "" {
		if dir, err = defaultNATSStore(); err != nil {
			return "", nil, usageErr("no --nats-store given and %v; give --nats-store DIR", err)
		}
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", nil, fmt.Errorf("embedded NATS store %s: %w", dir, err)
	}
	if beyondLoopback(ctx, host) {
		a.log.Warn("the embedded NATS server listens beyond loopback and asks no one for credentials: whoever reaches it may read, and forge, the events and the owners bucket that who --nats and followers believe; keep --nats-listen on 127.0.0.1, or give --nats the URL of a NATS server with authentication",
			"nats-listen", f.natsListen)
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	srv, err := natsserver.Run(sctx, natsserver.Config{Host: host, Port: port, StoreDir: dir})
	if err != nil {
		cancel()
		return "", nil, fmt.Errorf("start the embedded NATS server on %s: %w; give another --nats-listen, or --nats URL to use a NATS server already running", f.natsListen, err)
	}
	url := srv.ClientURL()
	a.log.Info("embedded NATS server with JetStream", "url", url, "store", dir)
	fmt.Fprintf(out, `herald: serving NATS with JetStream on %[1]s (data in %[2]s)
Subscribe to every event:
  nats sub 'herald.>' --server %[1]s
Or to one group's events, e.g. /jobs/nightly:
  nats sub 'herald.*.jobs.nightly' --server %[1]s
`, url, dir)
	return url, func() {
		cancel()
		srv.WaitForShutdown()
	}, nil
}

// beyondLoopback says whether a listener on host is reachable from other
// hosts: every address (empty, 0.0.0.0, ::), one not loopback, or a name
// that resolves to one, or does not resolve.
func beyondLoopback(ctx context.Context, host string) bool {
	if host == "localhost" {
		return false
	}
	if ip := net.ParseIP(host); ip != nil || host == "" {
		return ip == nil || !ip.IsLoopback()
	}
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIPAddr(lctx, host)
	if err != nil || len(ips) == 0 {
		return true
	}
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			return true
		}
	}
	return false
}

// defaultNATSStore is $XDG_STATE_HOME/herald/nats, or
// ~/.local/state/herald/nats.
func defaultNATSStore() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "herald", "nats"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory (%v)", err)
	}
	return filepath.Join(home, ".local", "state", "herald", "nats"), nil
}

func sinkNames(ss []publish.Sink) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.Name()
	}
	return strings.Join(names, ",")
}
