package bridge

import (
	"context"
	"errors"
	"sync"
	"time"
)

// An HA bridge writes to the shared sinks only while it can prove that it
// leads: its session answered within a third of its timeout. A session
// that answered at T cannot have expired on the server before T plus its
// timeout, so no standby can lead before then. What this catches is a
// bridge frozen (SIGSTOP, a paused VM) or cut off whose ZooKeeper client
// has not yet said so: on waking, its sink workers would otherwise write
// their retries before it learned that it was deposed, over what the
// bridge that leads now wrote.

// lease is when the bridge's session last answered, as of the request's
// sending.
type lease struct {
	mu     sync.Mutex
	proven time.Time
}

var (
	errNotPublishing = errors.New("bridge: not leading (standing by)")
	errNoLease       = errors.New("bridge: ZooKeeper has not confirmed the session lately")
)

// mayWrite is the pipeline's write gate (publish.WithWriteGate).
func (b *Bridge) mayWrite(ctx context.Context) error {
	if !b.leading.Load() {
		return errNotPublishing
	}
	_, s := b.sessionState()
	if s == nil {
		return errNoLease
	}
	bound := s.Timeout() / 3
	b.lease.mu.Lock()
	defer b.lease.mu.Unlock() // one proof at a time: the workers share it
	if time.Since(b.lease.proven) < bound {
		return nil
	}
	asked := time.Now()
	d := bound
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		d = time.Until(dl)
	}
	if !b.zkAnswers(d) {
		return errNoLease
	}
	b.lease.proven = asked
	return nil
}
