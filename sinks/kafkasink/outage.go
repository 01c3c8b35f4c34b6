package kafkasink

import (
	"context"
	"log/slog"
	"time"
)

// readOutage is a partition reader's view of a broker outage. kafka-go's
// reader retries a failing broker itself, but after a few attempts it
// hands each failure to ReadMessage as well; the reader goes on working
// once the broker is back. Taking such an error for the end of the
// stream, as herald once did, left a follower (tail --kafka,
// FollowOwners, Events) deaf for good after a few seconds' outage. So a
// failure is logged once per outage, waited out with a growing pause, and
// reading goes on until the caller's context ends.
type readOutage struct {
	log       *slog.Logger
	topic     string
	partition int
	since     time.Time // zero while reads succeed
	pause     time.Duration
}

// wait logs err (once per outage) and pauses before the next read; false
// when ctx ended.
func (o *readOutage) wait(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if o.since.IsZero() {
		o.since, o.pause = time.Now(), 100*time.Millisecond
		if o.log != nil {
			o.log.Warn("kafkasink: cannot read from Kafka; retrying until it answers", "topic", o.topic, "partition", o.partition, "err", err)
		}
	} else {
		o.pause = min(2*o.pause, 2*time.Second)
	}
	t := time.NewTimer(o.pause)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// over notes a read that succeeded, ending an outage.
func (o *readOutage) over() {
	if o.since.IsZero() {
		return
	}
	if o.log != nil {
		o.log.Info("kafkasink: reading from Kafka again", "topic", o.topic, "partition", o.partition, "after", time.Since(o.since).Round(time.Millisecond))
	}
	o.since = time.Time{}
}
