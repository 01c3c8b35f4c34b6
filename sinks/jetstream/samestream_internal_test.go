package jetstream

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// racingJS answers Stream with a stream whose last sequence is what it
// was when asked, while the reader handles one more message meanwhile,
// as the reader's own goroutine does while the look is under way.
type racingJS struct {
	jetstream.JetStream
	r    *eventReader
	last uint64
}

func (j *racingJS) Stream(context.Context, string) (jetstream.Stream, error) {
	asked := j.last
	j.last++
	j.r.last.Store(j.last) // a message stored after the answer was made, read before the look compares
	return fakeStream{info: &jetstream.StreamInfo{State: jetstream.StreamState{LastSeq: asked}}}, nil
}

type fakeStream struct {
	jetstream.Stream
	info *jetstream.StreamInfo
}

func (s fakeStream) CachedInfo() *jetstream.StreamInfo { return s.info }

// TestSameStreamIsNotFooledByAMessageReadDuringTheLook: the look at the
// stream runs beside the reading. A message stored after the stream
// answered, and read before the answer is compared, is no sign of a
// stream made again; only a stream that ends below what was read before
// the look is.
func TestSameStreamIsNotFooledByAMessageReadDuringTheLook(t *testing.T) {
	r := &eventReader{cfg: followConfig{stream: "HERALD"}}
	r.started.Store(true)
	js := &racingJS{r: r, last: 21713}
	r.js = js
	r.last.Store(21713)
	if err := r.sameStream(context.Background()); err != nil {
		t.Fatalf("a message read during the look was taken for a stream made again: %v", err)
	}
	r.last.Store(30000) // read before the look: the stream ends below it
	if err := r.sameStream(context.Background()); !errors.Is(err, ErrStreamGone) {
		t.Fatalf("a stream ending below what was read: %v, want ErrStreamGone", err)
	}
}
