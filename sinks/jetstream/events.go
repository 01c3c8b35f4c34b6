package jetstream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/natssink"
)

// EventStream delivers stored events until its context ends or its
// connection closes; then Events is closed and Err says why.
type EventStream struct {
	ch      chan publish.Event
	skipped atomic.Uint64

	mu  sync.Mutex
	err error
}

// Events delivers the events in stream order (which is order per group).
func (s *EventStream) Events() <-chan publish.Event { return s.ch }

// Err is why Events closed; nil while it is open.
func (s *EventStream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Skipped counts messages that were not herald events and were left out.
func (s *EventStream) Skipped() uint64 { return s.skipped.Load() }

// Events reads the HERALD stream for group ("" for every group) with an
// ordered consumer, from the start (or from Since), then follows new
// events. Unless Raw is given, each event passes a publish.Follower first:
// duplicates (a bridge's snapshot after a restart, two bridges during a
// takeover) and events about older terms are dropped. The consumer is
// re-created from the last delivered position after any failure, with
// backoff.
func Events(ctx context.Context, js jetstream.JetStream, group string, opts ...FollowOption) (*EventStream, error) {
	cfg, err := newFollowConfig(opts)
	if err != nil {
		return nil, err
	}
	filter := publish.SubjectPrefix + ".>"
	if group != "" {
		tok, err := publish.Tokens(group)
		if err != nil {
			return nil, err
		}
		filter = publish.SubjectPrefix + ".*." + tok
	}
	if cfg.follower == nil && !cfg.raw {
		if cfg.follower, err = publish.NewFollower(); err != nil {
			return nil, err
		}
	}
	r := &eventReader{cfg: cfg, js: js, filter: filter, s: &EventStream{ch: make(chan publish.Event, cfg.buffer)},
		outage: readOutage{log: cfg.log, stream: cfg.stream}}
	c, err := r.consumer(ctx)
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("jetstream: no stream %s: a herald bridge with the JetStream sink (--nats) makes it when it starts, and again if it was deleted; start or restart one, or check the NATS URL and the stream name: %w", cfg.stream, err)
		}
		return nil, err
	}
	go r.run(ctx, c)
	return r.s, nil
}

// eventsHeartbeat is how often the server says a quiet consumer is alive.
// Two missed ones make the client re-create the consumer: on a cluster the
// ordered consumer lives on one server, and when that server stops, the
// reader goes on from another within about two heartbeats.
const eventsHeartbeat = time.Second

type eventReader struct {
	cfg    followConfig
	js     jetstream.JetStream
	filter string
	s      *EventStream
	last   atomic.Uint64 // stream sequence of the last message handled
	// started: a consumer was made once (the stream existed).
	started atomic.Bool
	outage  readOutage
}

// readOutage logs an events reader's outages: once when the stream cannot
// be read, once when it can again. It is used by the reader's goroutines.
type readOutage struct {
	log    *slog.Logger
	stream string
	down   atomic.Bool
	mu     sync.Mutex
	since  time.Time
}

// fail notes that the stream cannot be read now.
func (o *readOutage) fail(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down.Load() {
		return
	}
	o.down.Store(true)
	o.since = time.Now()
	if o.log != nil {
		o.log.Warn("jetstream: cannot read the events stream; retrying until it answers (events are read on from where the reader was)", "stream", o.stream, "err", err)
	}
}

// ok notes that the stream answered.
func (o *readOutage) ok() {
	if !o.down.Load() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.down.Load() {
		return
	}
	o.down.Store(false)
	if o.log != nil {
		o.log.Info("jetstream: reading the events stream again", "stream", o.stream, "after", time.Since(o.since).Round(time.Millisecond))
	}
}

func (r *eventReader) consumer(ctx context.Context) (jetstream.Consumer, error) {
	oc := jetstream.OrderedConsumerConfig{FilterSubjects: []string{r.filter}, DeliverPolicy: jetstream.DeliverAllPolicy, InactiveThreshold: ReaderIdle}
	switch {
	case r.last.Load() > 0:
		oc.DeliverPolicy, oc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, r.last.Load()+1
	case !r.cfg.since.IsZero():
		t := r.cfg.since
		oc.DeliverPolicy, oc.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	}
	if err := r.sameStream(ctx); err != nil {
		return nil, err
	}
	c, err := r.js.OrderedConsumer(ctx, r.cfg.stream, oc)
	if errors.Is(err, jetstream.ErrStreamNotFound) && r.started.Load() {
		return nil, fmt.Errorf("%w: %s no longer exists: read again once a bridge has made it again: %w", ErrStreamGone, r.cfg.stream, err)
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: ordered consumer on %s (%s): %w", r.cfg.stream, r.filter, err)
	}
	r.started.Store(true)
	return c, nil
}

// sameStream says, once something was read, whether the stream is still
// the one read from: going on from where we were is right only there. A
// stream deleted (and perhaps made again, its sequences starting over)
// lost what it held, and the reader must say so rather than wait for
// sequences the new one may never reach. A stream that does not answer
// (no leader, the connection down) is an outage: its error is not
// ErrStreamGone.
func (r *eventReader) sameStream(ctx context.Context) error {
	if !r.started.Load() {
		return nil
	}
	// What was read before the look: every one of those was stored
	// before the stream answers it, so its last sequence is no lower.
	// Read after, a message stored since would count against it.
	last := r.last.Load()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := r.js.Stream(cctx, r.cfg.stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("%w: %s no longer exists; events after its sequence %d may be missing: read again from the start", ErrStreamGone, r.cfg.stream, last)
	case err == nil && st.CachedInfo().State.LastSeq < last:
		return fmt.Errorf("%w: %s was deleted and made again (its last sequence %d is below %d, read already); events in between may be missing: read again from the start", ErrStreamGone, r.cfg.stream, st.CachedInfo().State.LastSeq, last)
	case err != nil:
		return fmt.Errorf("jetstream: stream %s does not answer: %w", r.cfg.stream, err) // an outage, not the end
	}
	return nil
}

// streamCheck is how often a reader looks whether its stream is still
// there (the client's ordered consumer waits for a deleted one for ever).
const streamCheck = 2 * time.Second

// ErrStreamGone ends an EventStream whose stream was deleted while it read:
// what the stream held is lost to it, and it cannot tell what it missed.
var ErrStreamGone = errors.New("jetstream: the stream was deleted")

func (r *eventReader) run(ctx context.Context, c jetstream.Consumer) {
	err := r.loop(ctx, c)
	r.s.mu.Lock()
	r.s.err = err
	r.s.mu.Unlock()
	close(r.s.ch)
}

func (r *eventReader) loop(ctx context.Context, c jetstream.Consumer) error {
	rt := retry{first: r.cfg.first, limit: r.cfg.limit}
	for {
		if c != nil {
			before := r.last.Load()
			// Why it stopped matters less than where (r.last), unless the
			// stream itself is gone.
			if err := r.read(ctx, c); errors.Is(err, ErrStreamGone) {
				return err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if r.js.Conn().IsClosed() {
				return ErrConnClosed
			}
			c = nil
			if r.last.Load() != before {
				rt.reset() // it worked for a while: retry at once
				var err error
				if c, err = r.again(ctx); c != nil || err != nil {
					if err != nil {
						return err
					}
					continue
				}
			}
		} else {
			var err error
			if c, err = r.again(ctx); c != nil || err != nil {
				if err != nil {
					return err
				}
				continue
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(rt.wait()):
		}
	}
}

// again makes a new consumer: nil and nil when it cannot now (an outage,
// noted), or the error that ends the reading (the stream gone).
func (r *eventReader) again(ctx context.Context) (jetstream.Consumer, error) {
	c, err := r.consumer(ctx)
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, ErrStreamGone):
		return nil, err
	case ctx.Err() == nil:
		r.outage.fail(err)
	}
	return nil, nil
}

// read delivers one consumer's messages until it fails or ctx ends.
func (r *eventReader) read(ctx context.Context, c jetstream.Consumer) error {
	// The next consumer, if any, starts after what this one delivered.
	// Deleted aside while reading goes on (a connection that is down
	// would hold it up), and at once when it ends: the reader's program
	// (tail) closes its connection right after.
	defer func() {
		if ctx.Err() != nil {
			DropConsumer(r.js, r.cfg.stream, c)
		} else {
			go DropConsumer(r.js, r.cfg.stream, c)
		}
	}()
	it, err := c.Messages(jetstream.PullHeartbeat(eventsHeartbeat))
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	done := make(chan struct{})
	defer close(done)
	var gone streamGone
	go r.checkStream(ctx, done, it, &gone)
	for {
		m, err := it.Next()
		if err != nil {
			return cmp.Or(gone.get(), err)
		}
		r.outage.ok()
		if md, err := m.Metadata(); err == nil {
			r.last.Store(md.Sequence.Stream)
		}
		e, err := natssink.Decode(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
		if err != nil {
			r.s.skipped.Add(1)
			continue
		}
		if !r.cfg.raw && !r.cfg.follower.Apply(e) {
			continue
		}
		select {
		case r.s.ch <- e:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// streamGone is why a read's stream check stopped its messages: the
// stream went.
type streamGone struct {
	mu  sync.Mutex
	err error
}

func (g *streamGone) set(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.err = err
}

func (g *streamGone) get() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// checkStream looks at the stream every streamCheck until done: gone, it
// stops the read's messages and says so in gone; another failure is an
// outage of the reader, and an answer ends one.
func (r *eventReader) checkStream(ctx context.Context, done <-chan struct{}, it jetstream.MessagesContext, gone *streamGone) {
	t := time.NewTicker(streamCheck)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		err := r.sameStream(ctx)
		switch {
		case errors.Is(err, ErrStreamGone):
			gone.set(err)
			it.Stop()
			return
		case err != nil && ctx.Err() == nil:
			// The consumer re-creates itself quietly, for ever:
			// the stream's own answer says whether it can.
			r.outage.fail(err)
		case err == nil:
			r.outage.ok()
		}
	}
}
