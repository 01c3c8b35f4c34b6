package kafkasink

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/publish"
)

var _ publish.ConnState = (*Sink)(nil)

// minProbeTimeout is the least a probe waits for a broker: a loaded host
// answering a little late is not an outage.
const minProbeTimeout = 2 * time.Second

// Connected implements publish.ConnState: whether a broker answered the
// last look, Connect's or the probe's (Config.ProbeInterval). It is false
// before Connect and after Close.
//
// kafka-go's writer cannot say this: it dials per request, and its
// transport answers metadata requests from a cache that outlives the
// brokers, so an idle sink would read healthy through an outage until a
// write failed. The probe therefore keeps a plain connection of its own
// (with the sink's SASL and TLS) and sends a metadata request on it,
// dialling the brokers in turn when it broke; it never takes the lock
// Write holds, so it cannot slow a write down.
func (s *Sink) Connected() bool { return s.up.Load() }

// startProbe starts the probe behind Connected unless it runs. Called
// with s.mu held.
func (s *Sink) startProbe() { s.probe.Start(s.watch) }

// stopProbe stops the probe and waits for it to end. Called with s.mu held
// (the probe never takes it).
func (s *Sink) stopProbe() { s.probe.Stop() }

// watch asks the brokers every ProbeInterval until ctx ends. Connect has
// just looked, so the first probe waits an interval.
func (s *Sink) watch(ctx context.Context) {
	var conn *kafka.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	t := time.NewTicker(s.cfg.ProbeInterval)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var err error
		conn, err = s.ask(ctx, conn)
		if ctx.Err() != nil {
			return // cut off by Close: says nothing about the brokers
		}
		s.up.Store(err == nil)
		switch {
		case err != nil && !warned:
			warned = true
			s.cfg.Logger.Warn("kafkasink: no broker answers; the sink reads not healthy until one does",
				"brokers", s.cfg.Brokers, "err", err)
		case err == nil && warned:
			warned = false
			s.cfg.Logger.Info("kafkasink: the brokers answer again", "brokers", s.cfg.Brokers)
		}
	}
}

// ask sends a metadata request on conn, or, when there is none or it
// broke, on a new connection to the first broker that takes one. It
// returns the connection to keep (nil when no broker answered).
func (s *Sink) ask(ctx context.Context, conn *kafka.Conn) (*kafka.Conn, error) {
	timeout := max(s.cfg.ProbeInterval, minProbeTimeout)
	if conn != nil {
		if askOn(ctx, conn, timeout) == nil {
			return conn, nil
		}
		// Broken (the broker went away, or closed an idle or
		// re-authenticating connection): dial afresh below.
		_ = conn.Close()
	}
	d := s.cfg.dialer()
	d.Timeout = timeout
	var last error
	for _, b := range s.brokers() {
		c, err := d.DialContext(ctx, "tcp", b)
		if err == nil {
			if err = askOn(ctx, c, timeout); err == nil {
				return c, nil
			}
			_ = c.Close()
		}
		last = fmt.Errorf("%s: %w", b, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, classify(s.cfg, last)
}

// askOn sends a metadata request for no topic (the brokers' list: cheap)
// and waits at most timeout, or until ctx ends, for the answer.
func askOn(ctx context.Context, c *kafka.Conn, timeout time.Duration) error {
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	_, err := c.Brokers()
	return err
}
