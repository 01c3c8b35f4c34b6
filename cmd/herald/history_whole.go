package main

import (
	"context"
	"fmt"
	"time"

	js "github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/sinks/jetstream"
)

// streamWhole reports whether the stream holds every message ever stored
// in it (no first message dropped, none deleted inside), asked without
// stream info ($JS.API.STREAM.INFO), which a reader may not be allowed:
// it holds every one iff it holds as many messages as its last one's
// sequence. The count is taken first, from an unfiltered consumer's
// pending messages, then the last sequence: a message stored in between
// makes the stream read as not whole, as before, never the other way
// round. The history of one group, whose read skips the other groups'
// messages, cannot tell from its read, and a reader denied stream info
// marked GAP maybe every group whose events begin with a change.
func streamWhole(ctx context.Context, jsc js.JetStream) (bool, error) {
	// A message stored between the two reads makes a whole stream read
	// as not whole: a stream written to all the time (a bridge's
	// heartbeats) is asked again, a few times.
	for try := 1; ; try++ {
		whole, err := streamWholeOnce(ctx, jsc)
		if err != nil || whole || try == wholeTries {
			return whole, err
		}
	}
}

// wholeTries is how often streamWhole asks before it says not whole.
const wholeTries = 3

// streamWholeOnce is one ask of streamWhole's.
func streamWholeOnce(ctx context.Context, jsc js.JetStream) (bool, error) {
	count, err := streamPending(ctx, jsc, js.DeliverAllPolicy, nil)
	if err != nil || count == 0 {
		return count == 0, err
	}
	var last uint64
	if _, err := streamPending(ctx, jsc, js.DeliverLastPolicy, &last); err != nil {
		return false, err
	}
	return count == last, nil
}

// streamPending is how many messages an unfiltered consumer delivering by
// policy has pending as it is made; with last not nil, the stream
// sequence of the first it delivers is stored there.
func streamPending(ctx context.Context, jsc js.JetStream, policy js.DeliverPolicy, last *uint64) (uint64, error) {
	c, err := jsc.OrderedConsumer(ctx, jetstream.DefaultStream, js.OrderedConsumerConfig{DeliverPolicy: policy})
	if err != nil {
		return 0, err
	}
	defer jetstream.DropConsumer(jsc, jetstream.DefaultStream, c)
	info, err := c.Info(ctx)
	if err != nil {
		return 0, err
	}
	if last == nil || info.NumPending == 0 {
		return info.NumPending, nil
	}
	it, err := c.Messages(js.PullHeartbeat(time.Second))
	if err != nil {
		return 0, err
	}
	defer it.Stop()
	stop := time.AfterFunc(historyStall, it.Stop)
	defer stop.Stop()
	defer context.AfterFunc(ctx, it.Stop)()
	msg, err := it.Next()
	if err != nil {
		return 0, fmt.Errorf("read the stream's last message: %w", err)
	}
	md, err := msg.Metadata()
	if err != nil {
		return 0, err
	}
	*last = md.Sequence.Stream
	return info.NumPending, nil
}
