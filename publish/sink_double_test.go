package publish

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// memSink is an in-memory test double of Sink, for the pipeline's own
// logic. It stores batches whole or not at all and records protocol
// violations (a Write while not connected) instead of hiding them.
type memSink struct {
	name string

	mu         sync.Mutex
	events     []Event
	connected  bool
	connects   int
	writes     int
	violations []string
	failNext   int   // fail this many Writes
	failErr    error // the error they return
	closed     bool
	gate       chan struct{}   // when non-nil, Write waits for it (or ctx)
	refuse     map[string]bool // event ids Write refuses for good
}

func newMem(name string) *memSink { return &memSink{name: name} }

func (s *memSink) Name() string { return s.name }

func (s *memSink) Connect(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.connects++
	s.connected = true
	return nil
}

func (s *memSink) Write(ctx context.Context, batch []Event) error {
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	if !s.connected {
		s.violations = append(s.violations, fmt.Sprintf("write %d before connect", s.writes))
	}
	if s.closed {
		return errors.New("memsink: closed")
	}
	if s.failNext > 0 {
		s.failNext--
		if errors.Is(s.failErr, ErrReconnect) {
			s.connected = false
		}
		return s.failErr
	}
	for i, e := range batch {
		if s.refuse[e.ID] {
			s.events = append(s.events, batch[:i]...)
			return &RejectedError{Index: i, Err: errors.New("memsink: too large")}
		}
	}
	s.events = append(s.events, batch...)
	return nil
}

func (s *memSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

func (s *memSink) stored() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events...)
}

func (s *memSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}

// block makes Writes wait until the returned release is called.
func (s *memSink) block() (release func()) {
	ch := make(chan struct{})
	s.mu.Lock()
	s.gate = ch
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.gate = nil
			s.mu.Unlock()
			close(ch)
		})
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// fakeClock is a Clock whose Now is set by the test and whose After fires
// at once, recording the waits asked for.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	now := c.now
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- now.Add(d)
	return ch
}

func (c *fakeClock) recorded() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}
