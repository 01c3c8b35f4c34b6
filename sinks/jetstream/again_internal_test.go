package jetstream

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestAgain: what a cluster says while a stream changes leader is tried
// again; anything else, or an error marked final, ends at once.
func TestAgain(t *testing.T) {
	notReady := &jetstream.APIError{Code: 503, ErrorCode: jsErrExpectedLastSeqPerSubjectNotReady}
	for _, tc := range []struct {
		name  string
		errs  []error // what each attempt returns; nil from then on
		calls int
		fails bool
	}{
		{"no responders, then stored", []error{nats.ErrNoResponders, jetstream.ErrNoStreamResponse}, 3, false},
		{"lost acknowledgments", []error{fmt.Errorf("wave: %w", context.DeadlineExceeded), nats.ErrDisconnected, nats.ErrReconnectBufExceeded}, 4, false},
		{"new leader not ready", []error{fmt.Errorf("write owner: %w", notReady)}, 2, false},
		{"stream gone", []error{jetstream.ErrStreamNotFound}, 1, true},
		{"final", []error{final(errors.Join(nats.ErrTimeout, jetstream.ErrStreamNotFound))}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := again(context.Background(), func(ctx context.Context) error {
				if _, ok := ctx.Deadline(); !ok {
					t.Error("an attempt without a deadline")
				}
				calls++
				if calls <= len(tc.errs) {
					return tc.errs[calls-1]
				}
				return nil
			})
			if calls != tc.calls || (err != nil) != tc.fails {
				t.Errorf("%d calls, error %v; want %d calls, failing: %t", calls, err, tc.calls, tc.fails)
			}
		})
	}

	// Retrying ends with the caller's context, with the last error.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := again(ctx, func(context.Context) error { return nats.ErrNoResponders })
	if !errors.Is(err, nats.ErrNoResponders) || time.Since(start) > 2*time.Second {
		t.Errorf("after %v: %v; want no responders once the context ends", time.Since(start), err)
	}
}
