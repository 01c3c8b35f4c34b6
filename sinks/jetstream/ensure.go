package jetstream

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/publish"
)

// ensureStream creates the stream when it is missing, with the sink's
// Replicas, MaxAge, MaxBytes and Duplicates. An existing stream is never
// changed: herald checks that it captures herald.> and that its duplicate
// window is at least the sink's, and says what to change when it is not.
func (s *Sink) ensureStream(ctx context.Context) error {
	want := s.cfg.streamConfig()
	st, err := s.js.Stream(ctx, want.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		if _, err := s.js.CreateStream(ctx, want); err != nil {
			return fmt.Errorf("jetstream: create stream %s on %s.>: %w; check that JetStream is enabled and no other stream takes these subjects",
				want.Name, publish.SubjectPrefix, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("jetstream: look up stream %s: %w; check that JetStream is enabled", want.Name, err)
	}
	return checkStream(st.CachedInfo().Config, want)
}

// checkStream says why herald cannot use an existing stream as it is.
func checkStream(have, want jetstream.StreamConfig) error {
	if !slices.ContainsFunc(have.Subjects, func(sub string) bool { return sub == ">" || sub == publish.SubjectPrefix+".>" }) {
		return fmt.Errorf("jetstream: stream %s exists but does not capture %s.> (its subjects: %v); add %s.> to its subjects, or give herald another stream",
			have.Name, publish.SubjectPrefix, have.Subjects, publish.SubjectPrefix)
	}
	if have.Duplicates < want.Duplicates {
		return fmt.Errorf("jetstream: stream %s deduplicates over %v, less than the %v herald needs (a takeover re-publishes that far back); raise its duplicate window, or give herald a shorter one (--nats-duplicates)",
			have.Name, have.Duplicates, want.Duplicates)
	}
	return nil
}

// ensureBucket opens the bucket, creating it when it is missing; an
// existing bucket is used as its operator configured it.
func ensureBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: open or create KV bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}
