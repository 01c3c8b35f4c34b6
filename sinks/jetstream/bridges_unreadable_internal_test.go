package jetstream

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// Only a bridges bucket that does not exist leaves values unjudged; one
// that cannot be read now (no JetStream leader, a timeout) does not.
func TestBridgesUnreadable(t *testing.T) {
	for _, c := range []struct {
		err        error
		unreadable bool
	}{
		{nil, false},
		{jetstream.ErrBucketNotFound, false},
		{fmt.Errorf("open: %w", jetstream.ErrBucketNotFound), false},
		{context.Canceled, false},
		{errors.New("nats: JetStream system temporarily unavailable"), true},
		{context.DeadlineExceeded, true},
		{jetstream.ErrJetStreamNotEnabled, true},
	} {
		if got := bridgesUnreadable(c.err) != nil; got != c.unreadable {
			t.Errorf("bridgesUnreadable(%v) = %v; want %v", c.err, got, c.unreadable)
		}
	}
}
