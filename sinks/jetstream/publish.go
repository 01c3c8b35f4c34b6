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
// event never reaches the stream before its predecessor. The events of a
// wave that were not acknowledged are sent again (see again) until ctx
// ends; then the wave's error ends the Write, and the pipeline's retry
// re-sends the stored ones as duplicates the stream drops.
func (s *Sink) publish(ctx context.Context, js jetstream.JetStream, groups map[string][]publish.Event, order []string, msgs map[string]*nats.Msg) error {
	for wave := 0; ; wave++ {
		var left []publish.Event
		for _, g := range order {
			if wave < len(groups[g]) {
				left = append(left, groups[g][wave])
			}
		}
		if len(left) == 0 {
			return nil
		}
		err := again(ctx, func(ctx context.Context) error {
			var err error
			left, err = s.send(ctx, js, left, msgs)
			return err
		})
		if err != nil {
			return err
		}
	}
}

// send publishes evs asynchronously and waits for their acknowledgments. It
// returns the events that were not acknowledged, with why; the error is
// final when one of them failed for a reason that will not pass by itself.
func (s *Sink) send(ctx context.Context, js jetstream.JetStream, evs []publish.Event, msgs map[string]*nats.Msg) ([]publish.Event, error) {
	pending := make([]pendingAck, 0, len(evs))
	for i, e := range evs {
		// A copy per attempt: the client may still be re-sending an
		// earlier attempt's message (on "no responders") while this
		// attempt sets its headers.
		m := msgs[e.ID]
		c := &nats.Msg{Subject: m.Subject, Data: m.Data, Header: nats.Header{}}
		for k, v := range m.Header {
			c.Header[k] = append([]string(nil), v...)
		}
		f, err := js.PublishMsgAsync(c, jetstream.WithMsgID(e.ID), jetstream.WithExpectStream(s.cfg.Stream))
		if err != nil {
			// What was sent is waited for; the rest goes again.
			unsent := evs[i:]
			left, werr := wait(ctx, pending)
			err = fmt.Errorf("%w: publish %s on %s: %w", ErrNotStored, e.ID, m.Subject, err)
			if !transient(err) {
				err = final(err)
			}
			return append(left, unsent...), errors.Join(err, werr)
		}
		pending = append(pending, pendingAck{e, f})
	}
	return wait(ctx, pending)
}

type pendingAck struct {
	e publish.Event
	f jetstream.PubAckFuture
}

// wait waits for every acknowledgment of a wave and returns the events not
// acknowledged with the failures, marked final when one of them will not
// pass by itself. A duplicate acknowledgment is a success: the event is
// stored.
func wait(ctx context.Context, pending []pendingAck) ([]publish.Event, error) {
	var left []publish.Event
	var errs []error
	isFinal := false
	for i, p := range pending {
		select {
		case ack := <-p.f.Ok():
			if ack == nil || ack.Stream == "" {
				left = append(left, p.e)
				errs = append(errs, fmt.Errorf("%w: %s: empty acknowledgment", ErrNotStored, p.e.ID))
			}
		case err := <-p.f.Err():
			left = append(left, p.e)
			errs = append(errs, fmt.Errorf("%w: %s on %s: %w", ErrNotStored, p.e.ID, p.f.Msg().Subject, err))
			isFinal = isFinal || !transient(err)
		case <-ctx.Done():
			for _, q := range pending[i:] {
				left = append(left, q.e)
			}
			errs = append(errs, fmt.Errorf("%w: waiting for %d acknowledgments: %w", ErrNotStored, len(pending)-i, ctx.Err()))
			return left, finalIf(isFinal, errors.Join(errs...))
		}
	}
	return left, finalIf(isFinal, errors.Join(errs...))
}

func finalIf(yes bool, err error) error {
	if yes {
		return final(err)
	}
	return err
}
