package jetstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/publish"
)

// publish stores the events in waves: wave i holds the i-th event of every
// group, published asynchronously, and the next wave starts only when the
// server acknowledged all of wave i. Groups go in parallel, yet a group's
// event never reaches the stream before its predecessor, even when a
// publish fails halfway (then the wave's error ends the Write, and the retry
// re-sends the stored ones as duplicates the stream drops).
func (s *Sink) publish(ctx context.Context, js jetstream.JetStream, groups map[string][]publish.Event, order []string, msgs map[string]*nats.Msg) error {
	for wave := 0; ; wave++ {
		var pending []pendingAck
		for _, g := range order {
			if wave >= len(groups[g]) {
				continue
			}
			e := groups[g][wave]
			m := msgs[e.ID]
			f, err := js.PublishMsgAsync(m, jetstream.WithMsgID(e.ID), jetstream.WithExpectStream(s.cfg.Stream))
			if err != nil {
				return fmt.Errorf("%w: publish %s on %s: %w", ErrNotStored, e.ID, m.Subject, err)
			}
			pending = append(pending, pendingAck{e, f})
		}
		if len(pending) == 0 {
			return nil
		}
		if err := wait(ctx, pending); err != nil {
			return err
		}
	}
}

type pendingAck struct {
	e publish.Event
	f jetstream.PubAckFuture
}

// wait waits for every acknowledgment of a wave and returns the first
// failure. A duplicate acknowledgment is a success: the event is stored.
func wait(ctx context.Context, pending []pendingAck) error {
	var errs []error
	for _, p := range pending {
		select {
		case ack := <-p.f.Ok():
			if ack == nil || ack.Stream == "" {
				errs = append(errs, fmt.Errorf("%w: %s: empty acknowledgment", ErrNotStored, p.e.ID))
			}
		case err := <-p.f.Err():
			errs = append(errs, fmt.Errorf("%w: %s on %s: %w", ErrNotStored, p.e.ID, p.f.Msg().Subject, err))
		case <-ctx.Done():
			return fmt.Errorf("%w: waiting for %d acknowledgments: %w", ErrNotStored, len(pending), ctx.Err())
		}
	}
	return errors.Join(errs...)
}
