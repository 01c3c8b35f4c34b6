package kafkasink

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/internal/probe"
	"github.com/zkherald/herald/publish"
)

// Sink publishes events to Kafka. It implements publish.Sink.
type Sink struct {
	cfg Config

	mu      sync.Mutex
	w       *kafka.Writer
	closing chan struct{} // closed when the previous writer has drained
	closed  bool
	// ensured says Connect made sure of the topics before; lost, that it
	// or StoreGone found the owners topic missing or made again since
	// (deleted while the sink ran): publish.StateKeeper.
	ensured bool
	lost    bool
	// ends is the owners topic's end offset per partition as last seen,
	// by a look (Connect's, StoreGone's) or after our own write to it,
	// which tells a topic made again by its ends falling.
	endsMu sync.Mutex
	ends   map[int]int64
	// reached is what each group last reached in the owners topic (see
	// ownerState), so a late loss never tombstones a newer owner. It
	// starts empty; LastReports fills it from the topic.
	reached map[string]ownerState

	// learned: the brokers the cluster's metadata named, tried after
	// Config.Brokers (see brokers).
	learned atomic.Pointer[[]string]

	// up is what Connected says: whether a broker answered the last
	// look, Connect's or probe's (see health.go).
	up    atomic.Bool
	probe probe.Loop

	// hb is what WriteHeartbeat uses, beside Write (which holds mu for a
	// whole batch): a writer of its own, made once the bridges topic
	// exists (a writer's metadata would not know a topic created after it).
	hb struct {
		sync.Mutex
		w      *kafka.Writer
		closed bool
	}
}

var (
	_ publish.HeartbeatSink = (*Sink)(nil)
	_ publish.StateKeeper   = (*Sink)(nil)
)

// New validates cfg and returns a sink. Nothing is dialled before Connect.
func New(cfg Config) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if _, err := cfg.tlsConfig(); err != nil {
		return nil, err
	}
	cfg.warnPlainInClear()
	return &Sink{cfg: cfg, reached: map[string]ownerState{}}, nil
}

// Name implements publish.Sink.
func (s *Sink) Name() string { return "kafka" }

// Config returns the configuration in use, defaults filled in.
func (s *Sink) Config() Config { return s.cfg }

// Connect dials the brokers, creates missing topics, checks the owners
// topic is compacted and starts a fresh writer. A writer left from a failed
// Write is drained first, so nothing it still retries can land after the
// batch the pipeline is about to re-send. The first call also starts the
// probe behind Connected, which runs until Close, whether this Connect
// succeeds or not.
func (s *Sink) Connect(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.startProbe()
	if err := s.drain(ctx); err != nil {
		return err
	}
	cl, tr, cfg, err := s.reach(ctx)
	if ctx.Err() == nil {
		// A fresh client's answer (or none) is as good a look as the
		// probe's; one cut off by ctx says nothing about the brokers.
		s.up.Store(err == nil)
	}
	if err != nil {
		return err
	}
	if s.ensured {
		// Made sure of before: an owners topic missing now was deleted,
		// and every group's owner with it.
		if s.ownersGone(ctx, cl) {
			s.lost = true
			s.forgetEnds()
		}
	}
	if err := s.ensureTopics(ctx, cl); err != nil {
		tr.CloseIdleConnections()
		return fmt.Errorf("%w (brokers %v)", err, s.cfg.Brokers)
	}
	if s.noteEnds(ctx, cl) && s.ensured {
		s.lost = true // made again by someone else since the last look
	}
	s.ensured = true
	s.w = &kafka.Writer{
		Addr:         kafka.TCP(cfg.Brokers...),
		Transport:    tr,
		Balancer:     s.cfg.Partitioner.balancer(),
		RequiredAcks: kafka.RequireAll,
		// kafka-go waits up to BatchTimeout (1 s by default) for a
		// partition batch to fill: a latency trap for a stream of
		// rare, urgent events. See Config.BatchTimeout.
		BatchTimeout:    s.cfg.BatchTimeout,
		BatchSize:       chunkMessages,
		BatchBytes:      maxMessageBytes,
		WriteTimeout:    s.cfg.WriteTimeout,
		MaxAttempts:     3,
		WriteBackoffMin: 50 * time.Millisecond,
		WriteBackoffMax: 500 * time.Millisecond,
		Completion:      s.wrote,
	}
	return nil
}

// StateLost implements publish.StateKeeper: whether, since the last call,
// Connect found the owners topic deleted (after it had made sure of it)
// and made it again, or found it made again by someone else (its end
// offsets fell), or StoreGone found either. The pipeline then writes
// every group's owner again.
func (s *Sink) StateLost() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	lost := s.lost
	s.lost = false
	return lost
}

// drain closes the current writer, waiting (up to ctx) for its in-flight
// produce requests to finish. Called with s.mu held.
func (s *Sink) drain(ctx context.Context) error {
	if s.w != nil {
		w, done := s.w, make(chan struct{})
		s.w, s.closing = nil, done
		go func() {
			defer close(done)
			w.Close()
			if tr, ok := w.Transport.(*kafka.Transport); ok {
				tr.CloseIdleConnections()
			}
		}()
	}
	if s.closing == nil {
		return nil
	}
	select {
	case <-s.closing:
		s.closing = nil
		return nil
	case <-ctx.Done():
		return fmt.Errorf("kafkasink: waiting for the previous writer to drain: %w", ctx.Err())
	}
}

// Write publishes the batch: every event to the events topic, and each
// group's resulting owner to the owners topic. It returns only when the
// brokers acknowledged everything (acks=all). On error it stops at once,
// never writing past a failed chunk, and the error wraps
// publish.ErrReconnect: the pipeline reconnects and re-sends the whole
// batch, so a key may get duplicates (same ids) but never a hole. An event
// that can never be stored (larger than a Kafka message may be, or not
// encodable) ends the batch with a *publish.RejectedError once the events
// before it are written.
func (s *Sink) Write(ctx context.Context, batch []publish.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return ErrClosed
	}
	msgs := make([]kafka.Message, 0, len(batch)+len(batch)/2)
	for i, e := range batch {
		m, err := eventMessage(s.cfg.EventsTopic, e)
		if n := messageSize(m) + ownerOverhead; err == nil && n > maxMessageBytes {
			err = fmt.Errorf("kafkasink: event %s of %s is about %d bytes, more than a Kafka message may be (%d, the brokers' default message.max.bytes)",
				e.ID, e.Group, n, maxMessageBytes)
		}
		if err != nil {
			if err := s.write(ctx, batch[:i], msgs); err != nil {
				return err
			}
			return &publish.RejectedError{Index: i, Err: err}
		}
		msgs = append(msgs, m)
	}
	return s.write(ctx, batch, msgs)
}

// write sends the events' messages (msgs, one per event of batch) and the
// owner changes the batch makes.
func (s *Sink) write(ctx context.Context, batch []publish.Event, msgs []kafka.Message) error {
	if len(batch) == 0 {
		return nil
	}
	changes, states := ownerChanges(batch, s.reached)
	for _, e := range changes {
		m, err := ownerMessage(s.cfg.OwnersTopic, e, states[e.Group].unseen)
		if err != nil {
			return err
		}
		msgs = append(msgs, m)
	}
	for _, c := range chunks(msgs) {
		if err := s.w.WriteMessages(ctx, c...); err != nil {
			return fmt.Errorf("%w: kafkasink: write %d messages to %s/%s via brokers %v: %w",
				publish.ErrReconnect, len(c), s.cfg.EventsTopic, s.cfg.OwnersTopic, s.cfg.Brokers, firstError(err))
		}
	}
	for g, st := range states {
		s.reached[g] = st
	}
	return nil
}

// firstError reduces kafka-go's per-message WriteErrors to its first cause.
func firstError(err error) error {
	var we kafka.WriteErrors
	if errors.As(err, &we) {
		for _, e := range we {
			if e != nil {
				return fmt.Errorf("%d of %d messages failed, first: %w", we.Count(), len(we), e)
			}
		}
	}
	return err
}

// Close stops the probe and drains the writer; later Writes fail with
// ErrClosed, and Connected says false.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.stopProbe()
	s.up.Store(false)
	s.hb.Lock()
	s.hb.closed = true
	if s.hb.w != nil {
		closeWriter(s.hb.w)
		s.hb.w = nil
	}
	s.hb.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	defer cancel()
	return s.drain(ctx)
}

// brokers is where to connect: Config.Brokers, then the other brokers the
// cluster's metadata named. Kafka clients take their bootstrap addresses
// for the first contact only; a bridge given one address (--kafka
// kafka-1:9092) would otherwise stop publishing while that broker is
// down, though every partition has a leader elsewhere.
func (s *Sink) brokers() []string {
	if l := s.learned.Load(); l != nil {
		return withBrokers(s.cfg.Brokers, *l)
	}
	return append([]string(nil), s.cfg.Brokers...)
}

// learn keeps the brokers a metadata answer named (see brokers).
func (s *Sink) learn(bs []kafka.Broker) {
	if len(bs) == 0 {
		return
	}
	addrs := brokerAddrs(bs)
	s.learned.Store(&addrs)
}

// reach asks the brokers (see brokers), one after the other, for the
// cluster's metadata, keeps the brokers the answer names, and returns a
// client on the first that answered, and the configuration to write
// through it. The error is the first broker's, classified, when none
// answers.
func (s *Sink) reach(ctx context.Context) (*kafka.Client, *kafka.Transport, Config, error) {
	var first error
	for i, b := range s.brokers() {
		cfg := s.cfg
		cfg.Brokers = []string{b}
		cl, tr, err := cfg.client()
		if err != nil {
			return nil, nil, cfg, err
		}
		md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{s.cfg.EventsTopic}})
		if err == nil {
			s.learn(md.Brokers)
			return cl, tr, cfg, nil
		}
		tr.CloseIdleConnections()
		if i == 0 {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, nil, s.cfg, classify(s.cfg, first)
}
