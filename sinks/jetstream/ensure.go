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
			if perr := replicasError(err, want.Replicas, s.nc.ConnectedUrlRedacted()); perr != nil {
				return fmt.Errorf("jetstream: create stream %s: %w", want.Name, perr)
			}
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
	if want.Replicas > 1 && have.Replicas < want.Replicas {
		return fmt.Errorf("jetstream: stream %s has replicas %d, fewer than the %d asked for (herald does not change an existing stream); raise them (nats stream edit %s --replicas %d), or ask for %d (--nats-replicas)",
			have.Name, max(have.Replicas, 1), want.Replicas, have.Name, want.Replicas, max(have.Replicas, 1))
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
		if perr := replicasError(err, cfg.Replicas, js.Conn().ConnectedUrlRedacted()); perr != nil {
			return nil, fmt.Errorf("jetstream: create KV bucket %s: %w", cfg.Bucket, perr)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: open or create KV bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// checkOwnersBucket refuses an owners bucket that may drop a current
// value by itself: one with a TTL (MaxAge), or byte or message limits that
// discard old values. A group whose owner has not changed for that long
// would lose its only record, and readers, its bridge's heartbeats still
// confirming, would be told it has no owner. (A full bucket that discards
// new values fails the write instead, which the sink reports.)
func checkOwnersBucket(bucket string, have jetstream.StreamConfig) error {
	return checkKeptBucket(bucket, "", have, "the only record of a group whose owner has not changed, and readers would be told the group has no owner")
}

// checkBridgesBucket refuses a bucket of heartbeats that may drop a
// heartbeat by itself, as checkOwnersBucket does an owners bucket: the
// last heartbeat of a bridge that died (kill -9 writes no "stopped") is
// what tells readers its values are stale, and without it they are read
// as from a bridge that sends none: not judged.
func checkBridgesBucket(bucket string, have jetstream.StreamConfig) error {
	return checkKeptBucket(bucket, ", of the bridges' heartbeats,", have, "the last heartbeat of a bridge that died, and readers would no longer call its values stale")
}

// checkKeptBucket refuses a bucket (what, when not "", says of what) whose
// stream may drop a value by itself, which would drop lost.
func checkKeptBucket(bucket, what string, have jetstream.StreamConfig, lost string) error {
	why := dropsOldValues(have)
	if why == "" {
		return nil
	}
	return fmt.Errorf("%w: jetstream: KV bucket %s%s has %s: it would drop %s; make the bucket again without it (nats kv del %s; herald makes it when it starts), or give herald another bucket",
		publish.ErrSinkConfig, bucket, what, why, lost, bucket)
}

// dropsOldValues says how a KV bucket's stream may drop a value by itself
// ("" when it does not).
func dropsOldValues(have jetstream.StreamConfig) string {
	var why string
	switch {
	case have.MaxAge > 0:
		why = fmt.Sprintf("a TTL of %v", have.MaxAge)
	case have.Discard == jetstream.DiscardOld && have.MaxBytes > 0:
		why = fmt.Sprintf("a limit of %d bytes that discards old values", have.MaxBytes)
	case have.Discard == jetstream.DiscardOld && have.MaxMsgs > 0:
		why = fmt.Sprintf("a limit of %d values that discards old ones", have.MaxMsgs)
	}
	return why
}

// replicasError says what to do when the server cannot place replicas
// copies of a stream (nil when err is about something else): a single
// server keeps one copy only, and a cluster needs a server per copy.
func replicasError(err error, replicas int, server string) error {
	var api *jetstream.APIError
	if err == nil || replicas <= 1 || !errors.As(err, &api) {
		return nil
	}
	switch api.ErrorCode {
	case jsErrReplicasNotSupported:
		return &tooFewServers{err: err, permanent: true, why: fmt.Sprintf(
			"replicas %d needs a NATS cluster of at least %d JetStream servers; %s is not clustered: use --nats-replicas 1", replicas, replicas, server)}
	case jsErrClusterNoPeers, jsErrInsufficientResources:
		return &tooFewServers{err: err, why: fmt.Sprintf(
			"replicas %d needs %d JetStream servers of the NATS cluster up and with room, and fewer are: start the missing servers, or lower --nats-replicas", replicas, replicas)}
	}
	return nil
}

// tooFewServers is ErrReplicas with what to do, and the server's words.
// permanent: the server is not clustered, so no retry helps
// (publish.ErrSinkConfig); a cluster short of servers may yet gain them.
type tooFewServers struct {
	why       string
	err       error
	permanent bool
}

func (e *tooFewServers) Error() string { return e.why + " (server: " + e.err.Error() + ")" }
func (e *tooFewServers) Unwrap() error { return e.err }
func (e *tooFewServers) Is(target error) bool {
	return target == ErrReplicas || e.permanent && target == publish.ErrSinkConfig
}
