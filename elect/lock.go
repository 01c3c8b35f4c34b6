package elect

import (
	"context"
	"time"
)

// Lock is a mutual-exclusion lock on a group path (seed 003). Waiters'
// nodes are named in the group's dialect (see Dialect); in a new group
// "_c_<herald id>-lock-<sequence>", the names Curator's InterProcessMutex,
// go-zookeeper's Lock and the classic recipe order.
type Lock struct{ q *queue }

// NewLock returns a lock on path. WithID sets the holder id stored in the
// node (default: the session id).
func NewLock(s *Session, path string, opts ...Option) (*Lock, error) {
	q, err := newQueue(s, path, RecipeLock, "lock-", opts)
	if err != nil {
		return nil, err
	}
	return &Lock{q: q}, nil
}

// Path is the lock's group path.
func (l *Lock) Path() string { return l.q.parent }

// Acquire blocks until the lock is ours, ctx ends, or the session is lost.
// Giving up, it first removes its node and notes on the group node that it
// never owned (see queue.withdraw), for at most half a second.
func (l *Lock) Acquire(ctx context.Context) (*Handle, error) {
	return l.q.acquire(ctx, l.id(), false)
}

// AcquireTimeout is Acquire bounded by d.
func (l *Lock) AcquireTimeout(ctx context.Context, d time.Duration) (*Handle, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return l.Acquire(ctx)
}

// TryAcquire takes the lock only if nobody holds or waits for it; otherwise
// it removes its node and returns ErrLocked.
func (l *Lock) TryAcquire(ctx context.Context) (*Handle, error) {
	return l.q.acquire(ctx, l.id(), true)
}

// Holder returns the current holder (ErrNoLeader when free).
func (l *Lock) Holder(ctx context.Context) (Participant, error) {
	return leaderOf(ctx, l.q.s, l.q.parent)
}

func (l *Lock) id() string {
	if l.q.o.id != "" {
		return l.q.o.id
	}
	return Participant{Session: l.q.s.ID()}.SessionHex()
}
