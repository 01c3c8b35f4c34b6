package jetstream

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// On a NATS cluster a replicated stream changes leader when its leader's
// server stops, and for a moment nobody acknowledges a publish: the
// message is dropped, or the client hears "no responders", or the new
// leader is not ready to check an expected sequence yet. Write therefore
// sends what was not acknowledged again, with backoff, for as long as its
// context (or AckTimeout) allows; each attempt waits at most attemptWait
// for its acknowledgments. Sending again is safe: the stream stores an
// event id once, and an owners write that did land makes the retry's
// compare-and-set fail, re-read and find nothing left to do.
const (
	attemptWait  = time.Second
	againInitial = 25 * time.Millisecond
	againMax     = 500 * time.Millisecond
)

// again runs op until it succeeds, fails for a reason that will not pass by
// itself (or that op marks with final), or ctx ends; then it returns op's
// last error.
func again(ctx context.Context, op func(context.Context) error) error {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = againInitial, againMax, 0
	b.Reset()
	for {
		actx, cancel := context.WithTimeout(ctx, attemptWait)
		err := op(actx)
		cancel()
		var f *finalError
		if errors.As(err, &f) {
			return err
		}
		if err == nil || ctx.Err() != nil || !transient(err) {
			return err
		}
		t := time.NewTimer(b.NextBackOff())
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// finalError marks an error again must not retry.
type finalError struct{ err error }

func (f *finalError) Error() string { return f.err.Error() }
func (f *finalError) Unwrap() error { return f.err }

// final marks err, when it is not nil, as one again returns at once.
func final(err error) error {
	if err == nil {
		return nil
	}
	return &finalError{err}
}

// transient reports whether err is one a cluster gives while a stream
// changes leader or the client moves to another server.
func transient(err error) bool {
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, jetstream.ErrAsyncPublishTimeout),
		errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrConnectionReconnecting),
		// herald's connections buffer nothing while they reconnect.
		errors.Is(err, nats.ErrReconnectBufExceeded):
		return true
	}
	var api *jetstream.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode {
		case jsErrClusterNotAvailable, jsErrExpectedLastSeqPerSubjectNotReady:
			return true
		}
	}
	return false
}

// JetStream error codes herald tells apart (the nats.go client names only
// some of them).
const (
	jsErrClusterNoPeers                    jetstream.ErrorCode = 10005 // no suitable peers for placement
	jsErrClusterNotAvailable               jetstream.ErrorCode = 10008 // JetStream system temporarily unavailable
	jsErrInsufficientResources             jetstream.ErrorCode = 10023
	jsErrReplicasNotSupported              jetstream.ErrorCode = 10074 // replicas > 1 in non-clustered mode
	jsErrExpectedLastSeqPerSubjectNotReady jetstream.ErrorCode = 10163
)
