package publish

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// privMem is a memSink only this process writes (Private).
type privMem struct{ *memSink }

func (privMem) Private() bool { return true }

// TestPauseDropsWhatSharedSinksHadToWrite: a caller that stops publishing
// (an HA bridge deposed) writes nothing more to a shared sink, neither its
// backlog nor the batch it was retrying, and says which groups it dropped;
// a Private sink still gets everything.
func TestPauseDropsWhatSharedSinksHadToWrite(t *testing.T) {
	shared, local := newMem("shared"), privMem{newMem("local")}
	down := errors.New("down")
	for _, s := range []*memSink{shared, local.memSink} {
		s.failNext, s.failErr = 1<<30, down
	}
	p, ctx := runningPipe(t, []Sink{shared, local}, WithBackoff(time.Millisecond, 5*time.Millisecond), WithBatchSize(2))
	if err := p.Publish(ctx, seq("/a", 3, time.Now())...); err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(ctx, seq("/b", 1, time.Now())...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "both sinks tried", func() bool {
		shared.mu.Lock()
		defer shared.mu.Unlock()
		return shared.writes > 2
	})
	groups := p.Pause()
	if len(groups) != 2 {
		t.Errorf("Pause dropped the groups %v, want /a and /b", groups)
	}
	for _, s := range []*memSink{shared, local.memSink} {
		s.mu.Lock()
		s.failNext = 0
		s.mu.Unlock()
	}
	waitFor(t, 5*time.Second, "the local sink written", func() bool { return local.count() == 4 })
	time.Sleep(100 * time.Millisecond)
	if n := shared.count(); n != 0 {
		t.Fatalf("the shared sink got %d events after Pause", n)
	}
	if st := p.Stats().Sinks["shared"]; st.Dropped != 4 || st.Backlog != 0 {
		t.Fatalf("shared sink after Pause: %+v; want 4 dropped, nothing pending", st)
	}
}

// TestWriteGateHoldsSharedSinks: while the write gate says no, a shared
// sink is not written and not counted as failing; a Private one is.
func TestWriteGateHoldsSharedSinks(t *testing.T) {
	shared, local := newMem("shared"), privMem{newMem("local")}
	var open atomic.Bool
	gate := func(context.Context) error {
		if open.Load() {
			return nil
		}
		return errors.New("no lease")
	}
	p, ctx := runningPipe(t, []Sink{shared, local}, WithWriteGate(gate))
	if err := p.Publish(ctx, seq("/g", 2, time.Now())...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the local sink written", func() bool { return local.count() == 2 })
	time.Sleep(150 * time.Millisecond)
	if n := shared.count(); n != 0 {
		t.Fatalf("the shared sink got %d events through a closed gate", n)
	}
	if st := p.Stats().Sinks["shared"]; st.Failing || st.Errors != 0 {
		t.Fatalf("a closed gate counted as the sink failing: %+v", st)
	}
	open.Store(true)
	waitFor(t, 5*time.Second, "the shared sink written once the gate opens", func() bool { return shared.count() == 2 })
}

// TestPauseNamesTheGroupsInFlight: the groups of the batch a sink was
// retrying when the caller stopped publishing are among those Pause says
// it dropped, not only those still queued: with everything in one batch,
// a bridge that leads again would otherwise publish them afresh with no
// gap mark.
func TestPauseNamesTheGroupsInFlight(t *testing.T) {
	shared := newMem("shared")
	shared.failNext, shared.failErr = 1<<30, errors.New("down")
	p, ctx := runningPipe(t, []Sink{shared}, WithBackoff(time.Millisecond, 5*time.Millisecond), WithBatchSize(10))
	if err := p.Publish(ctx, seq("/a", 3, time.Now())...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the batch tried", func() bool {
		shared.mu.Lock()
		defer shared.mu.Unlock()
		return shared.writes > 1
	})
	groups := p.Pause()
	if len(groups) != 1 || groups[0] != "/a" {
		t.Fatalf("Pause named %v; want /a, whose three events were in flight", groups)
	}
	shared.mu.Lock()
	shared.failNext = 0
	shared.mu.Unlock()
	waitFor(t, 5*time.Second, "the batch dropped", func() bool { return p.Stats().Sinks["shared"].Dropped == 3 })
	if n := shared.count(); n != 0 {
		t.Fatalf("the shared sink got %d events after Pause", n)
	}
}

// slowConnect is a sink whose Connect waits until released.
type slowConnect struct {
	*memSink
	entered, release chan struct{}
	once             sync.Once
}

func (s *slowConnect) Connect(ctx context.Context) error {
	s.once.Do(func() { close(s.entered) })
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.memSink.Connect(ctx)
}

// TestPauseDuringConnectWritesNothing: a batch whose sink was connecting
// when the caller stopped publishing is dropped once the connect returns,
// not written.
func TestPauseDuringConnectWritesNothing(t *testing.T) {
	s := &slowConnect{memSink: newMem("slow"), entered: make(chan struct{}), release: make(chan struct{})}
	p, ctx := runningPipe(t, []Sink{s}, WithWriteGate(func(context.Context) error { return nil }))
	if err := p.Publish(ctx, seq("/a", 2, time.Now())...); err != nil {
		t.Fatal(err)
	}
	<-s.entered // past the gate, connecting
	p.Pause()
	close(s.release)
	waitFor(t, 5*time.Second, "the batch dropped", func() bool { return p.Stats().Sinks["slow"].Dropped == 2 })
	if n := s.count(); n != 0 {
		t.Fatalf("the sink got %d events after Pause (its connect was under way)", n)
	}
}

// runningPipe is a pipeline over sinks, running until the test ends, and
// the context to publish with.
func runningPipe(t *testing.T, sinks []Sink, opts ...Option) (*Pipeline, context.Context) {
	t.Helper()
	p, err := New(sinks, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go p.Run(ctx)
	t.Cleanup(func() {
		cancel()
		_ = p.Close(context.Background())
	})
	return p, ctx
}

// TestMarkGapOnlyWhereAsked: MarkGap marks the next event of the group
// queued for the sinks picked (a Private one here), and only that one;
// the other sinks get it as published, and Stats.Gaps does not count it.
func TestMarkGapOnlyWhereAsked(t *testing.T) {
	shared, local := newMem("shared"), privMem{newMem("local")}
	p, ctx := runningPipe(t, []Sink{shared, local})
	p.MarkGap("/a", func(_ string, private bool) bool { return private })
	if err := p.Publish(ctx, append(seq("/b", 1, time.Now()), seq("/a", 2, time.Now())...)...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "both sinks written", func() bool { return local.count() == 3 && shared.count() == 3 })
	gaps := func(s *memSink) (out []string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, e := range s.events {
			if e.Gap {
				out = append(out, e.ID)
			}
		}
		return out
	}
	local.mu.Lock()
	firstA := ""
	for _, e := range local.events {
		if e.Group == "/a" {
			firstA = e.ID
			break
		}
	}
	local.mu.Unlock()
	if got := gaps(local.memSink); len(got) != 1 || got[0] != firstA {
		t.Errorf("the Private sink's gaps %v, want only the first event of /a (%s)", got, firstA)
	}
	if got := gaps(shared); len(got) != 0 {
		t.Errorf("the shared sink's gaps %v, want none", got)
	}
	if n := p.Stats().Gaps; n != 0 {
		t.Errorf("Stats.Gaps = %d, want 0: a sink's own gap is not the observer's", n)
	}
}
