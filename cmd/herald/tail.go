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
snapshot finding the group empty; a loss or release names the owner who left
as previous= and the next owner, when it carries one, as next=), term, reason, GAP when the bridge could
not prove it saw every owner in between (also when it found the group empty
again: owners may have come and gone unseen), and SUSPECT(why) for a node
that cannot be what the queue says. Each change is printed once even when
bridges publish it twice. When no bridge confirms a group shown any more
(its bridge killed, frozen, stopped or cut off: the heartbeats tell, as
for who), a STALE line says so, since changes may then go unseen, and a
CONFIRMED line when a bridge confirms it again (with --json, a log record
on standard error). --since also prints the
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
	var r tailSource
	switch src {
	case "nats":
		r, err = a.tailNATS(ctx, o, group, start)
	case "kafka":
		r, err = a.tailKafka(ctx, o, group)
	default:
		return usageErr("tail reads what bridges publish: give --nats URL or --kafka BROKERS")
	}
	if err != nil {
		return err
	}
	defer r.close()
	marks := a.followFreshness(ctx, o, r.js, r.cfg, group)
	n := 0
	for {
		select {
		case m := <-marks:
			if err := a.printMark(m, o.json); err != nil {
				return err
			}
			continue
		case e, ok := <-r.events:
			if !ok {
				if err := r.why(); err != nil && !errors.Is(err, context.Canceled) {
					return err
				}
				return nil
			}
			if len(o.groups) > 1 && !slices.Contains(o.groups, e.Group) {
				continue
			}
			if src == "kafka" && e.Time.Before(start) {
				continue // Kafka is read from the beginning
			}
			if err := a.printEvent(e, o.json); err != nil {
				return err
			}
		}
		if n++; o.count > 0 && n >= o.count {
			return nil
		}
	}
}

// tailSource is what tail reads: the events, why they ended, and the
// connection to follow the owners store beside them with (js for NATS,
// else cfg for Kafka).
type tailSource struct {
	events <-chan publish.Event
	why    func() error
	close  func()
	js     jsapi.JetStream
	cfg    kafkasink.Config
}

func (a *app) tailNATS(ctx context.Context, o tailOpts, group string, start time.Time) (tailSource, error) {
	js, closeNC, err := o.sf.jetStream(ctx, a.log)
	if err != nil {
		return tailSource{}, err
	}
	st, err := jetstream.Events(ctx, js, group, jetstream.Since(start), jetstream.WithLogger(a.log))
	if errors.Is(err, jsapi.ErrStreamNotFound) {
		closeNC()
		return tailSource{}, fmt.Errorf("follow the HERALD stream (is a bridge publishing to JetStream?): %w", err)
	}
	if err != nil {
		closeNC()
		return tailSource{}, jsErr(ctx, fmt.Errorf("follow the HERALD stream: %w", err))
	}
	return tailSource{events: st.Events(), why: st.Err, close: closeNC, js: js}, nil
}

func (a *app) tailKafka(ctx context.Context, o tailOpts, group string) (tailSource, error) {
	cfg, err := o.sf.kafkaConfig(a.log)
	if err != nil {
		return tailSource{}, err
	}
	st, err := kafkasink.Events(ctx, cfg, group)
	if err != nil {
		return tailSource{}, fmt.Errorf("follow %s: %w", kafkasink.DefaultEventsTopic, err)
	}
	return tailSource{events: st.C(), why: st.Err, close: func() { _ = st.Close() }, cfg: cfg}, nil
}

func (a *app) printEvent(e publish.Event, asJSON bool) error {
	if asJSON {
		return writeJSON(a.stdout, e)
	}
	_, err := fmt.Fprintln(a.stdout, eventLine(e))
	return err
}
