package elect

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Election elects one leader among the candidates of a group path.
type Election struct{ q *queue }

// NewElection returns an election on path. Candidates' nodes are named in
// the group's dialect (see Dialect); in a new group
// "_c_<herald id>-latch-<sequence>", the names Curator's LeaderLatch and
// the classic recipe order.
func NewElection(s *Session, path string, opts ...Option) (*Election, error) {
	q, err := newQueue(s, path, RecipeElection, "candidate-", opts)
	if err != nil {
		return nil, err
	}
	return &Election{q: q}, nil
}

// Path is the election's group path.
func (e *Election) Path() string { return e.q.parent }

// Campaign joins the election as id and blocks until this candidate leads,
// ctx ends, or the session is lost. A cancelled Campaign removes its node.
func (e *Election) Campaign(ctx context.Context, id string) (*Handle, error) {
	return e.q.acquire(ctx, id, false)
}

// Leader returns the current leader (ErrNoLeader when there is none).
func (e *Election) Leader(ctx context.Context) (Participant, error) {
	return leaderOf(ctx, e.q.s, e.q.parent)
}

// Participants returns every candidate, leader first.
func (e *Election) Participants(ctx context.Context) ([]Participant, error) {
	v, err := ReadGroup(ctx, e.q.s, e.q.parent)
	if err != nil {
		return nil, err
	}
	return v.Queue, nil
}

// acquire enqueues and waits; on any failure our node is removed with a
// fresh context, so a cancelled or failed waiter leaves nothing behind.
func (q *queue) acquire(ctx context.Context, id string, tryOnly bool) (*Handle, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := q.s.gone(); err != nil {
		return nil, err
	}
	if err := q.s.awaitConnected(ctx); err != nil {
		return nil, err
	}
	// The first listing is sent right behind the create, unless the
	// waiter will guess instead (see rotation).
	t, pre, err := q.enqueueListing(ctx, []byte(id), tryOnly || !q.guessable())
	if err != nil {
		return nil, err
	}
	if q.o.queued != nil {
		q.o.queued(t.name)
	}
	t, err = q.wait(ctx, t, []byte(id), tryOnly, pre)
	if err != nil {
		if t.name != "" {
			q.withdraw(t.name)
		}
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, q.parent)
		}
		return nil, err
	}
	return newHandle(q, t, id), nil
}

func leaderOf(ctx context.Context, s *Session, path string) (Participant, error) {
	v, err := readGroup(ctx, s, path, false) // the owner alone: no read of every waiter
	if err != nil {
		return Participant{}, err
	}
	if v.Owner == nil {
		return Participant{}, fmt.Errorf("%w in %s", ErrNoLeader, path)
	}
	return *v.Owner, nil
}

// contains reports whether children holds name.
func contains(children []string, name string) bool { return slices.Contains(children, name) }
