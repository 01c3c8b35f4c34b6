package natssink

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/zkherald/herald/publish"
)

// Sink publishes events on NATS core subjects. NATS core keeps nothing: a
// subscriber that is not listening misses the event. Use the JetStream sink
// for history and current owners.
type Sink struct {
	opts Options

	mu     sync.Mutex
	nc     *nats.Conn
	closed bool
}

var (
	_ publish.Sink      = (*Sink)(nil)
	_ publish.ConnState = (*Sink)(nil)
)

// New returns a sink that will connect with opts. It validates opts but does
// not touch the network; Connect does.
func New(opts Options) (*Sink, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Sink{opts: opts.withDefaults()}, nil
}

// Name implements publish.Sink.
func (s *Sink) Name() string { return "nats" }

// Connect dials NATS unless a connection exists. The connection then
// reconnects by itself; Connect is needed again only after it closed.
// While it is reconnecting, Connect fails (Options.Reconnecting) without
// dialling.
func (s *Sink) Connect(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.nc != nil && !s.nc.IsClosed() {
		if s.nc.IsReconnecting() {
			return s.opts.Reconnecting()
		}
		return nil
	}
	nc, err := s.opts.Dial(ctx)
	if err != nil {
		return err
	}
	s.nc = nc
	return nil
}

// Connected implements publish.ConnState: whether the connection is up now.
func (s *Sink) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed && s.nc != nil && s.nc.IsConnected()
}

// Conn returns the current connection (nil before Connect).
func (s *Sink) Conn() *nats.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nc
}

// Write publishes every event of the batch in order, then flushes: it
// returns nil only when the server has received them all. On error the
// pipeline retries the whole batch; subscribers may then see an event twice,
// with the same id. An event that can never be published (larger than the
// server's maximum payload, or not encodable) ends the batch with a
// *publish.RejectedError once the events before it are flushed.
func (s *Sink) Write(ctx context.Context, batch []publish.Event) error {
	nc, err := s.conn()
	if err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.Timeout)
		defer cancel()
	}
	for i, e := range batch {
		m, err := Msg(e)
		if err != nil {
			return s.refuse(ctx, nc, i, fmt.Errorf("natssink: event %s: %w", e.ID, err))
		}
		if err := nc.PublishMsg(m); err != nil {
			if errors.Is(err, nats.ErrMaxPayload) {
				return s.refuse(ctx, nc, i, fmt.Errorf("natssink: event %s on %s is larger than the server's maximum payload (%d bytes): %w",
					e.ID, m.Subject, nc.MaxPayload(), err))
			}
			return s.writeError(nc, fmt.Errorf("natssink: publish %s on %s: %w", e.ID, m.Subject, err))
		}
	}
	if err := nc.FlushWithContext(ctx); err != nil {
		return s.writeError(nc, fmt.Errorf("natssink: flush %d events: %w", len(batch), err))
	}
	return nil
}

// refuse flushes the events published before batch[i] and reports that
// batch[i] can never be published.
func (s *Sink) refuse(ctx context.Context, nc *nats.Conn, i int, err error) error {
	if i > 0 {
		if ferr := nc.FlushWithContext(ctx); ferr != nil {
			return s.writeError(nc, fmt.Errorf("natssink: flush %d events: %w", i, ferr))
		}
	}
	return &publish.RejectedError{Index: i, Err: err}
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

func (s *Sink) conn() (*nats.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, ErrClosed
	case s.nc == nil:
		return nil, fmt.Errorf("natssink: write before connect: %w", publish.ErrReconnect)
	}
	return s.nc, nil
}

// writeError asks for a reconnect when the connection is gone for good;
// while it is only reconnecting, a plain retry later will do.
func (s *Sink) writeError(nc *nats.Conn, err error) error {
	if nc.IsClosed() {
		err = fmt.Errorf("%w (%w)", err, publish.ErrReconnect)
	}
	return s.opts.Scrub(err)
}
