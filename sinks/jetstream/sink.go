package jetstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/natssink"
)

// Sink stores events in a JetStream stream (history, de-duplicated by
// event id) and keeps each group's current owner in a KV bucket.
type Sink struct {
	cfg Config

	mu     sync.Mutex
	nc     *nats.Conn
	js     jetstream.JetStream
	owners *owners
	// bridges is the heartbeats bucket, opened by the first WriteHeartbeat
	// on each connection.
	bridges jetstream.KeyValue
	closed  bool
	// opened says an owners bucket was opened before on this sink; lost,
	// that Connect or StoreGone found it missing or made again since
	// (deleted while the sink ran): publish.StateKeeper.
	opened bool
	lost   bool
}

var (
	_ publish.HeartbeatSink = (*Sink)(nil)
	_ publish.ConnState     = (*Sink)(nil)
	_ publish.StateKeeper   = (*Sink)(nil)
)

// New returns a sink for cfg. It validates cfg but does not touch the
// network; Connect does.
func New(cfg Config) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Sink{cfg: cfg.withDefaults()}, nil
}

// Name implements publish.Sink.
func (s *Sink) Name() string { return "jetstream" }

// Connect dials NATS (unless a connection exists) and creates the stream
// and the owners bucket when they are missing. While the connection is
// reconnecting by itself it fails without dialling, so that a sink that
// cannot deliver never reads connected. An existing stream or
// bucket is used as its operator configured it: herald only checks that it
// can work with it (see ensureStream).
func (s *Sink) Connect(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.nc != nil && s.nc.IsReconnecting() {
		return s.cfg.Conn.Reconnecting()
	}
	if s.nc == nil || s.nc.IsClosed() {
		nc, err := s.cfg.Conn.Dial(ctx)
		if err != nil {
			return err
		}
		js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(s.cfg.AckTimeout))
		if err != nil {
			nc.Close()
			return fmt.Errorf("jetstream: %w", err)
		}
		s.nc, s.js, s.owners, s.bridges = nc, js, nil, nil
	}
	if s.owners != nil {
		return nil
	}
	if err := s.ensureStream(ctx); err != nil {
		return s.cfg.Conn.Scrub(err)
	}
	if s.opened {
		// Opened before: a bucket missing now was deleted, and every
		// group's owner with it.
		if _, err := s.js.KeyValue(ctx, s.cfg.Bucket); errors.Is(err, jetstream.ErrBucketNotFound) {
			s.lost = true
		}
	}
	kv, err := ensureBucket(ctx, s.js, s.cfg.bucketConfig())
	if err != nil {
		return s.cfg.Conn.Scrub(err)
	}
	st, err := s.js.Stream(ctx, "KV_"+kv.Bucket())
	if err != nil {
		return fmt.Errorf("jetstream: open the stream of bucket %s: %w", s.cfg.Bucket, err)
	}
	if err := checkOwnersBucket(s.cfg.Bucket, st.CachedInfo().Config); err != nil {
		return err
	}
	// The bucket of heartbeats is made with the first heartbeat; one made
	// before by someone else is checked now. (One that cannot be looked
	// up is left to the heartbeat's write, which says why.)
	if bst, err := s.js.Stream(ctx, "KV_"+s.cfg.BridgesBucket); err == nil {
		if err := checkBridgesBucket(s.cfg.BridgesBucket, bst.CachedInfo().Config); err != nil {
			return err
		}
	}
	s.owners = &owners{js: s.js, stream: st, prefix: "$KV." + kv.Bucket() + "."}
	s.opened = true
	return nil
}

// StateLost implements publish.StateKeeper: whether, since the last call,
// Connect found the owners bucket deleted (after it had opened it) and
// made it again, or StoreGone found it deleted or made again by someone
// else. The pipeline then writes every group's owner again.
func (s *Sink) StateLost() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	lost := s.lost
	s.lost = false
	return lost
}

// Connected implements publish.ConnState: whether the connection to NATS
// is up now.
func (s *Sink) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed && s.nc != nil && s.nc.IsConnected()
}

// JetStream returns the JetStream handle (nil before Connect), for Follow
// and Events in the same process.
func (s *Sink) JetStream() jetstream.JetStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.js
}

// Config returns the sink's configuration with defaults filled in.
func (s *Sink) Config() Config { return s.cfg }

// Write stores the batch: first every event in the stream, in order per
// group (each acknowledged before the group's next is sent), then the
// owners bucket, one compare-and-set per group. nil means all of it is
// stored. What a cluster fails to acknowledge while a stream changes leader
// is sent again within the Write (see again); on error the pipeline retries
// the whole batch, and events already stored are recognised by id and
// stored once.
func (s *Sink) Write(ctx context.Context, batch []publish.Event) error {
	s.mu.Lock()
	js, ow, nc, closed := s.js, s.owners, s.nc, s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case ow == nil:
		return fmt.Errorf("jetstream: write before connect: %w", publish.ErrReconnect)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.AckTimeout)
		defer cancel()
	}
	msgs, i, err := s.encode(nc, batch)
	if err != nil {
		// Store what comes before the event the server would never take,
		// then say which one it is.
		if i > 0 {
			if err := s.Write(ctx, batch[:i]); err != nil {
				return err
			}
		}
		return &publish.RejectedError{Index: i, Err: err}
	}
	groups, order := byGroup(batch)
	if err := s.publish(ctx, js, groups, order, msgs); err != nil {
		return s.writeError(nc, s.gone(js, err))
	}
	for _, g := range order {
		if err := again(ctx, func(ctx context.Context) error { return ow.apply(ctx, g, groups[g]) }); err != nil {
			return s.writeError(nc, s.gone(js, err))
		}
	}
	return nil
}

// gone adds to a failed write's error that the stream or the owners bucket
// no longer exists, when that is why: someone deleted it, and the server
// then answers no publish at all (no stream takes the subject), so the
// write only times out. Connect makes them again (see writeError).
func (s *Sink) gone(js jetstream.JetStream, err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, serr := js.Stream(ctx, s.cfg.Stream); errors.Is(serr, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("%w (the stream %s was deleted: %w)", err, s.cfg.Stream, serr)
	}
	if _, kerr := js.KeyValue(ctx, s.cfg.Bucket); errors.Is(kerr, jetstream.ErrBucketNotFound) {
		return fmt.Errorf("%w (the bucket %s was deleted: %w)", err, s.cfg.Bucket, kerr)
	}
	return err
}

// Close closes the connection; later Writes fail with ErrClosed.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.nc != nil {
		s.nc.Close()
	}
	return nil
}

// writeError asks for Connect when the connection is gone for good or the
// stream or bucket is missing (deleted by an operator: Connect creates them
// again); otherwise a plain retry will do.
func (s *Sink) writeError(nc *nats.Conn, err error) error {
	missing := errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound)
	if missing {
		s.mu.Lock()
		s.owners = nil
		s.mu.Unlock()
	}
	if missing || nc.IsClosed() {
		err = fmt.Errorf("%w (%w)", err, publish.ErrReconnect)
	}
	return s.cfg.Conn.Scrub(err)
}

// byGroup splits a batch by group, keeping the order within each group and
// the order in which groups first appear.
func byGroup(batch []publish.Event) (map[string][]publish.Event, []string) {
	groups := map[string][]publish.Event{}
	var order []string
	for _, e := range batch {
		if _, ok := groups[e.Group]; !ok {
			order = append(order, e.Group)
		}
		groups[e.Group] = append(groups[e.Group], e)
	}
	return groups, order
}

// encode builds every event's message, by event id. It stops at the first
// event the server can never store — one that does not encode, or that is
// larger than its maximum payload once JetStream's headers are added — and
// returns its index with the reason.
func (s *Sink) encode(nc *nats.Conn, batch []publish.Event) (map[string]*nats.Msg, int, error) {
	max := nc.MaxPayload()
	msgs := make(map[string]*nats.Msg, len(batch))
	for i, e := range batch {
		m, err := natssink.Msg(e)
		if err != nil {
			return nil, i, fmt.Errorf("jetstream: event %s: %w", e.ID, err)
		}
		size := natssink.WireSize(m, map[string]string{jetstream.MsgIDHeader: e.ID, jetstream.ExpectedStreamHeader: s.cfg.Stream})
		if max > 0 && int64(size) > max {
			return nil, i, fmt.Errorf("jetstream: event %s is %d bytes, more than the server's maximum payload (%d bytes)", e.ID, size, max)
		}
		msgs[e.ID] = m
	}
	return msgs, -1, nil
}
