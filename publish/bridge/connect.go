package bridge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// connectSinks connects every sink once, retrying each with backoff until
// ConnectTimeout, so that a sink that is unreachable at start is reported
// at start (the pipeline itself would retry it forever).
func (b *Bridge) connectSinks(ctx context.Context) error {
	for _, s := range b.cfg.Sinks {
		name := s.Name()
		bo := b.backoff(100*time.Millisecond, 2*time.Second)
		bo.MaxElapsedTime = b.cfg.ConnectTimeout
		start := time.Now()
		attempt := 0
		var last error // the last answer that was not ctx's end
		for {
			attempt++
			actx, cancel := context.WithTimeout(ctx, b.cfg.ConnectTimeout)
			err := s.Connect(actx)
			cancel()
			if err == nil {
				b.mu.Lock()
				b.sinkUp[name] = true
				b.mu.Unlock()
				b.log.Info("sink connected", "sink", name, "attempts", attempt)
				break
			}
			if errors.Is(err, publish.ErrSinkConfig) {
				return fmt.Errorf("%w: %s: %w", ErrSinkSettings, name, err)
			}
			if ctx.Err() == nil || last == nil {
				last = err
			}
			wait := bo.NextBackOff()
			if ctx.Err() != nil || wait == backoff.Stop {
				err = last
				if ctx.Err() != nil {
					// Stopped while waiting: the attempt cut short by the
					// stop says nothing; the one before it does.
					err = fmt.Errorf("stopped while waiting (%w); the last answer: %v", ctx.Err(), last)
				}
				advice := "; check that it runs and the address and credentials are right"
				if strings.Contains(err.Error(), "; check ") || strings.Contains(err.Error(), ": check ") {
					advice = "" // the sink said what to check
				}
				return fmt.Errorf("%w: %s: %d attempts in %v: %w%s",
					ErrSinkUnreachable, name, attempt, time.Since(start).Round(time.Millisecond), err, advice)
			}
			b.log.Warn("sink not reachable yet, retrying", "sink", name, "attempt", attempt, "in", wait.Round(time.Millisecond), "err", err)
			if !sleep(ctx, wait) {
				continue // the next pass reports ctx's end
			}
		}
	}
	return nil
}

// openSession opens a ZooKeeper session. The first one is bounded by
// ConnectTimeout; later ones (after an expiry) are retried until ctx ends.
func (b *Bridge) openSession(ctx context.Context, first bool) (*elect.Session, error) {
	opts := []elect.SessionOption{
		elect.WithSessionTimeout(b.cfg.SessionTimeout),
		elect.WithConnectTimeout(b.cfg.ConnectTimeout),
		elect.AcceptNegotiatedTimeout(),
		elect.WithLogger(b.log),
	}
	if b.cfg.DigestAuth != "" {
		opts = append(opts, elect.WithDigestAuth(b.cfg.DigestAuth))
	}
	opts = append(opts, b.cfg.SessionOptions...)
	bo := b.backoff(200*time.Millisecond, b.cfg.MaxRetryWait)
	for attempt := 1; ; attempt++ {
		s, err := elect.NewSession(ctx, b.cfg.Servers, opts...)
		if err == nil {
			b.mu.Lock()
			b.session = s
			b.sessions++
			b.mu.Unlock()
			b.sessionCnt.Inc()
			b.log.Info("ZooKeeper session open", "session", fmt.Sprintf("0x%x", uint64(s.ID())), "timeout", s.Timeout(), "servers", strings.Join(b.cfg.Servers, ","))
			return s, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if first {
			return nil, fmt.Errorf("%w: %w", ErrZooKeeperUnreachable, err)
		}
		wait := bo.NextBackOff()
		b.log.Warn("no new ZooKeeper session yet, retrying", "attempt", attempt, "in", wait.Round(time.Millisecond), "err", err)
		sleep(ctx, wait)
	}
}

func (b *Bridge) backoff(initial, max time.Duration) *backoff.ExponentialBackOff {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = initial
	bo.MaxInterval = max
	if bo.MaxInterval < initial {
		bo.MaxInterval = initial
	}
	bo.MaxElapsedTime = 0
	bo.Reset()
	return bo
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// awaitConnected waits until s is connected (true) or gone or ctx ends.
func awaitConnected(ctx context.Context, s *elect.Session) bool {
	for {
		st, ch := s.State()
		switch st {
		case elect.StateConnected:
			return true
		case elect.StateLost, elect.StateClosed:
			return false
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}
