package kafkasink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// ErrTopicMadeAgain ends an Events stream whose topic came to end before
// the offset it had read to: someone deleted it and a bridge made it
// again (or a broker lost what it held). What the old topic held after
// that offset, and what the new one holds before it, is lost to the
// reader, and it cannot tell what it missed: read again from the start.
var ErrTopicMadeAgain = errors.New("kafkasink: the topic was deleted and made again while it was read")

// idleLook is how long a partition read waits for a record before it
// asks the brokers where the partition ends: kafka-go's reader, reading
// past the end of a topic made again, waits quietly for the new topic to
// grow that far, so the follower must look itself.
var idleLook = 5 * time.Second

// partRead reads one partition of a topic from its first offset for a
// follower, and notices the topic made again under it.
type partRead struct {
	cfg   Config
	topic string
	p     int
	// again: a topic made again is read again from its first offset (a
	// compacted topic of current state: the owners, the heartbeats);
	// otherwise the read ends with ErrTopicMadeAgain (the events).
	again bool
	// got receives each record; restart is called when the read starts
	// over (again), before the new topic's first record.
	got     func(kafka.Message) bool
	restart func()
	// reach, when set, is told whether the partition can be read: the
	// error while neither a read nor the brokers answer, nil once one does.
	reach func(error)
}

func (pr *partRead) reached(err error) {
	if pr.reach != nil {
		pr.reach(err)
	}
}

// run reads until ctx ends (nil), got returns false (nil) or the topic is
// found made again and not read again (ErrTopicMadeAgain).
func (pr *partRead) run(ctx context.Context) error {
	cl, tr, err := pr.cfg.client()
	if err != nil {
		return err
	}
	defer tr.CloseIdleConnections()
	for {
		next, err := pr.read(ctx, cl)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		if !pr.again {
			return err
		}
		pr.cfg.Logger.Warn("kafkasink: the topic was deleted and made again while it was read; reading it again from the start", "topic", pr.topic, "partition", pr.p, "read to", next)
		if pr.restart != nil {
			pr.restart()
		}
	}
}

// read reads one incarnation of the topic; it returns nil when ctx ended
// or got said stop, or ErrTopicMadeAgain with the offset read to.
func (pr *partRead) read(ctx context.Context, cl *kafka.Client) (next int64, err error) {
	r := pr.cfg.partitionReader(pr.topic, pr.p)
	defer r.Close()
	outage := readOutage{log: pr.cfg.Logger, topic: pr.topic, partition: pr.p}
	for {
		look, cancel := context.WithTimeout(ctx, idleLook)
		m, err := r.ReadMessage(look)
		quiet := look.Err() != nil // nothing came: asked before cancel says so
		cancel()
		switch {
		case ctx.Err() != nil:
			return next, nil
		case err == nil:
			outage.over()
			pr.reached(nil)
			next = m.Offset + 1
			if !pr.got(m) {
				return next, nil
			}
			continue
		case errors.Is(err, kafka.OffsetOutOfRange):
			// kafka-go found the topic shorter as it started over
			// (OffsetOutOfRangeError).
			return next, pr.madeAgain(next, -1)
		}
		end, endErr := pr.end(ctx, cl)
		if endErr == nil && end < next {
			return next, pr.madeAgain(next, end)
		}
		switch {
		case !quiet:
			pr.reached(err)
		case endErr != nil && ctx.Err() == nil:
			pr.reached(endErr) // quiet, and the brokers do not answer
		default:
			pr.reached(nil) // only quiet
		}
		if !quiet && !outage.wait(ctx, err) {
			return next, nil // ctx ended
		}
	}
}

// end asks the brokers where the partition ends now; the error says why
// they could not.
func (pr *partRead) end(ctx context.Context, cl *kafka.Client) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, idleLook)
	defer cancel()
	ends, err := lastOffsets(ctx, cl, pr.topic, pr.p)
	if err != nil {
		return 0, err
	}
	end, ok := ends[pr.p]
	if !ok {
		return 0, fmt.Errorf("partition %d of %s: no end offset in the brokers' answer", pr.p, pr.topic)
	}
	return end, nil
}

func (pr *partRead) madeAgain(next, end int64) error {
	at := "before it"
	if end >= 0 {
		at = fmt.Sprintf("at offset %d", end)
	}
	return fmt.Errorf("%w: partition %d of %s ends %s, below offset %d read already; records in between may be missing: read again from the start", ErrTopicMadeAgain, pr.p, pr.topic, at, next)
}
