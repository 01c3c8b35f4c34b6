package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestChaosRunnersBesideALibrary (HERALD_CHAOS=1, `make chaos`): the
// faults of TestChaosRunners, with a herald library handle in each group
// besides the runners, taking the group again and again for 20-80 ms.
// The library runs no command and does not wait for one: when a runner's
// node is deleted by hand, or its runner frozen, the library owns at once
// and releases, and the next runner must still wait for the deposed
// runner's command (see TestRunnerAfterALibraryOwner). Never two commands
// of one group at once; both groups keep changing hands, more slowly than
// without the library, as each runner after it waits.
func TestChaosRunnersBesideALibrary(t *testing.T) {
	c := newRunnerChaos(t)
	// A runner after the library waits up to 11/12 of the 2 s session
	// timeout before its command starts: fewer tenures than without it,
	// about 13 a minute in the election, so that a minute may leave one
	// of the four copies without a turn; three may not.
	c.minRun, c.minLock, c.everyLeads = 3, 20, 3*time.Minute
	var held map[string]int
	c.run(func() func() {
		lib := c.startLibrary()
		return func() { held = lib() }
	})
	t.Logf("the library owned the run group %d times and the lock group %d times", held["run"], held["lock"])
	for _, kind := range []string{"run", "lock"} {
		if held[kind] == 0 {
			t.Errorf("the library never owned the %s group: the test did not put it between runners", kind)
		}
	}
}

// startLibrary starts a library handle's loop in each group; the func it
// returns stops them and says how often each owned.
func (c *runnerChaos) startLibrary() func() map[string]int {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	counts := map[string]*atomic.Int64{"run": {}, "lock": {}}
	for kind := range counts {
		wg.Add(1)
		go func() { defer wg.Done(); c.libraryLoop(ctx, kind, counts[kind]) }()
	}
	return func() map[string]int {
		cancel()
		wg.Wait()
		return map[string]int{"run": int(counts["run"].Load()), "lock": int(counts["lock"].Load())}
	}
}

// libraryLoop takes the group of kind, holds it 20-80 ms and gives it
// back, again and again until ctx ends, in a session of its own (a new
// one when a fault's deletion or an expiry ends it).
func (c *runnerChaos) libraryLoop(ctx context.Context, kind string, owned *atomic.Int64) {
	timeout, _ := time.ParseDuration(chaosSessionTimeout)
	for ctx.Err() == nil {
		s, err := elect.NewSession(ctx, zktest.Shared(c.t).Addrs(), elect.WithSessionTimeout(timeout))
		if err != nil {
			if ctx.Err() == nil {
				c.t.Errorf("library session: %v", err)
			}
			return
		}
		for ctx.Err() == nil {
			held, err := c.libraryTenure(ctx, s, kind)
			if held {
				owned.Add(1)
			}
			if errors.Is(err, elect.ErrSessionLost) {
				break // a new session
			}
			pause := c.between(0, 200)
			if err != nil {
				pause = 100 * time.Millisecond // its node deleted by hand, say
			}
			time.Sleep(pause)
		}
		_ = s.Close()
	}
}

// libraryTenure is one turn of the library in the group of kind: held
// says whether it owned.
func (c *runnerChaos) libraryTenure(ctx context.Context, s *elect.Session, kind string) (held bool, _ error) {
	var h *elect.Handle
	var err error
	if kind == "lock" {
		l, lerr := elect.NewLock(s, c.group[kind])
		if lerr != nil {
			return false, fmt.Errorf("library lock: %w", lerr)
		}
		h, err = l.Acquire(ctx)
	} else {
		e, eerr := elect.NewElection(s, c.group[kind])
		if eerr != nil {
			return false, fmt.Errorf("library election: %w", eerr)
		}
		h, err = e.Campaign(ctx, "library")
	}
	if err != nil {
		return false, err
	}
	select {
	case <-time.After(c.between(20, 80)):
	case <-ctx.Done():
	}
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if kind == "lock" {
		return true, h.Release(rctx)
	}
	return true, h.Resign(rctx)
}
