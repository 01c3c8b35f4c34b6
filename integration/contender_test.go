package integration_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zkherald/herald/elect"
)

// contender campaigns (or locks) in a loop: each time its ownership ends it
// gives it back, opens a new session if needed and queues again, as a
// long-running herald candidate would.
type contender struct {
	id      string
	servers []string
	lock    bool
	timeout time.Duration

	mu      sync.Mutex
	handles []*elect.Handle // every handle ever held, in order
	cur     *elect.Handle
	// hold runs while owning (the lock holders' fenced work); nil: wait
	// until ownership ends.
	hold func(ctx context.Context, h *elect.Handle)
}

func (c *contender) run(ctx context.Context, group string) {
	for ctx.Err() == nil {
		s, err := elect.NewSession(ctx, c.servers, elect.WithSessionTimeout(c.timeout), elect.WithConnectTimeout(time.Minute))
		if err != nil {
			pause(ctx, 50*time.Millisecond)
			continue
		}
		c.term(ctx, s, group)
		_ = s.Close()
	}
}

// term queues on s and serves as long as s lets it. One Lock or Election
// serves the whole session, as in a long-running program: lock holders
// that queue again at once form a rotation, and their waits skip the
// listing (see elect's queue.guess), so faults hit that path too.
func (c *contender) term(ctx context.Context, s *elect.Session, group string) {
	var take func() (*elect.Handle, error)
	if c.lock {
		l, err := elect.NewLock(s, group, elect.CreateParents(), elect.WithID(c.id))
		if err != nil {
			return
		}
		take = func() (*elect.Handle, error) { return l.Acquire(ctx) }
	} else {
		e, err := elect.NewElection(s, group, elect.CreateParents())
		if err != nil {
			return
		}
		take = func() (*elect.Handle, error) { return e.Campaign(ctx, c.id) }
	}
	for ctx.Err() == nil && s.Err() == nil {
		h, err := take()
		if err != nil {
			return // a new session, unless ctx ended
		}
		c.mu.Lock()
		c.handles = append(c.handles, h)
		c.cur = h
		c.mu.Unlock()
		if c.hold != nil {
			c.hold(ctx, h)
		} else {
			select {
			case <-h.Done():
			case <-ctx.Done():
			}
		}
		c.mu.Lock()
		c.cur = nil
		c.mu.Unlock()
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if c.lock {
			_ = h.Release(rctx)
		} else {
			_ = h.Resign(rctx)
		}
		cancel()
		if h.Err() != nil {
			return // lost, not released: start over on a new session
		}
	}
}

// current returns the handle this contender holds now, if any.
func (c *contender) current() *elect.Handle {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil && c.cur.Held() {
		return c.cur
	}
	return nil
}

func (c *contender) all() []*elect.Handle {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*elect.Handle(nil), c.handles...)
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// exclusion samples every handle of every contender and records each
// instant at which two handles reported Held while both their nodes
// existed. Held only ever goes from true to false, so Held before and after
// a check that found both nodes proves both were held while both existed.
type exclusion struct {
	mu         sync.Mutex
	violations []string
	samples    int
	maxHeld    int
}

func (x *exclusion) watch(ctx context.Context, checker *elect.Session, cs []*contender) {
	for ctx.Err() == nil {
		var held []*elect.Handle
		for _, c := range cs {
			for _, h := range c.all() {
				if h.Held() {
					held = append(held, h)
				}
			}
		}
		x.mu.Lock()
		x.samples++
		x.maxHeld = max(x.maxHeld, len(held))
		x.mu.Unlock()
		if len(held) >= 2 {
			x.check(checker, held)
		}
		pause(ctx, time.Millisecond)
	}
}

func (x *exclusion) check(checker *elect.Session, held []*elect.Handle) {
	for _, h := range held {
		ok, _, err := checker.Conn().Exists(h.NodePath())
		if err != nil || !ok {
			return // one node is gone (or unknown): its holder is just late to hear it
		}
	}
	for _, h := range held {
		if !h.Held() {
			return
		}
	}
	var who []string
	for _, h := range held {
		who = append(who, fmt.Sprintf("%s (%s, term %d)", h.ID(), h.Node(), h.Term()))
	}
	x.mu.Lock()
	x.violations = append(x.violations, fmt.Sprintf("%s: %v held at once with every node present", time.Now().Format("15:04:05.000"), who))
	x.mu.Unlock()
}

func (x *exclusion) report() (violations []string, samples, maxHeld int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]string(nil), x.violations...), x.samples, x.maxHeld
}
