package publish

import (
	"context"
	"errors"
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
	p, err := New([]Sink{shared, local}, WithBackoff(time.Millisecond, 5*time.Millisecond), WithBatchSize(2))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	defer p.Close(context.Background())
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
	p, err := New([]Sink{shared, local}, WithWriteGate(gate))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	defer p.Close(context.Background())
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
