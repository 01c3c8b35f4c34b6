package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	jsapi "github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/kafkasink"
)

func init() { register(newTailCmd) }

type tailOpts struct {
	sf     sourceFlags
	json   bool
	since  time.Duration
	count  int
	groups []string
}

func newTailCmd(a *app) *cobra.Command {
	var o tailOpts
	cmd := &cobra.Command{
		Use:   "tail [PATH...] --nats URL | --kafka BROKERS",
		Short: "Print leadership and lock events as they happen",
		Long: `tail follows the events a bridge publishes, for the given groups or for all,
one line each: time, type, group, owner and previous owner (owner=none for a
snapshot finding the group empty), term, reason, GAP when the bridge could
not prove it saw every owner in between (also when it found the group empty
again: owners may have come and gone unseen), and SUSPECT(why) for a node
that cannot be what the queue says. Each change is printed once even when
bridges publish it twice. --since also prints the
stored events of that recent past first; --json prints one JSON event per line.

Exit codes: 0 (interrupted, or --count reached); 69 NATS or Kafka cannot be
reached, or JetStream on the NATS cluster cannot serve now (no quorum); 1
other failures; 2 usage errors.`,
		Example: `  herald tail --nats nats://localhost:4222
  herald tail /jobs/nightly /locks/backup --kafka broker1:9092 --since 1h --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			for _, g := range args {
				if err := groupArg("PATH", g); err != nil {
					return err
				}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.groups = args
			return unreachableExit(a.tail(cmd.Context(), o))
		},
	}
	o.sf.addFlags(cmd.Flags())
	cmd.Flags().BoolVar(&o.json, "json", false, "one JSON event per line")
	cmd.Flags().DurationVar(&o.since, "since", 0, "also print stored events of this recent past (e.g. 10m)")
	cmd.Flags().IntVar(&o.count, "count", 0, "exit after this many events (0: until interrupted)")
	return cmd
}

func (a *app) tail(ctx context.Context, o tailOpts) error {
	src, err := o.sf.which()
	if err != nil {
		return err
	}
	if o.since < 0 || o.count < 0 {
		return usageErr("--since and --count must not be negative")
	}
	start := time.Now().Add(-o.since)
	group := ""
	if len(o.groups) == 1 {
		group = o.groups[0]
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var events <-chan publish.Event
	var why func() error
	switch src {
	case "nats":
		js, closeNC, err := o.sf.jetStream(ctx, a.log)
		if err != nil {
			return err
		}
		defer closeNC()
		st, err := jetstream.Events(ctx, js, group, jetstream.Since(start), jetstream.WithLogger(a.log))
		if errors.Is(err, jsapi.ErrStreamNotFound) {
			return fmt.Errorf("follow the HERALD stream (is a bridge publishing to JetStream?): %w", err)
		}
		if err != nil {
			return jsErr(ctx, fmt.Errorf("follow the HERALD stream: %w", err))
		}
		events, why = st.Events(), st.Err
	case "kafka":
		cfg, err := o.sf.kafkaConfig(a.log)
		if err != nil {
			return err
		}
		st, err := kafkasink.Events(ctx, cfg, group)
		if err != nil {
			return fmt.Errorf("follow %s: %w", kafkasink.DefaultEventsTopic, err)
		}
		defer st.Close()
		events, why = st.C(), st.Err
	default:
		return usageErr("tail reads what bridges publish: give --nats URL or --kafka BROKERS")
	}
	n := 0
	for e := range events {
		if len(o.groups) > 1 && !slices.Contains(o.groups, e.Group) {
			continue
		}
		if src == "kafka" && e.Time.Before(start) {
			continue // Kafka is read from the beginning
		}
		if err := a.printEvent(e, o.json); err != nil {
			return err
		}
		if n++; o.count > 0 && n >= o.count {
			return nil
		}
	}
	if err := why(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func (a *app) printEvent(e publish.Event, asJSON bool) error {
	if asJSON {
		return writeJSON(a.stdout, e)
	}
	_, err := fmt.Fprintln(a.stdout, eventLine(e))
	return err
}
