package bridge

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/heraldtest"
	"github.com/zkherald/herald/internal/zkserver/zktest"
	"github.com/zkherald/herald/publish"
)

// beats is a sink that records the heartbeats written to it.
type beats struct {
	nopSink
	mu  sync.Mutex
	got []publish.Heartbeat
}

func (s *beats) WriteHeartbeat(_ context.Context, h publish.Heartbeat) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, h)
	return nil
}

func (s *beats) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

// TestHeartbeatAfterAStallWaitsForZooKeeper: a heartbeater that did not
// run for an interval (the bridge was frozen, or starved) confirms nothing
// until ZooKeeper has answered once since: its client may still say
// connected while the connection is gone and what changed meanwhile is
// unheard, and an active heartbeat dated now would make stale values read
// fresh.
func TestHeartbeatAfterAStallWaitsForZooKeeper(t *testing.T) {
	addrs := zktest.Shared(t).Addrs()
	p, err := faultproxy.New(addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	s := heraldtest.Session(t, []string{p.Addr()})
	sink := &beats{}
	b, err := New(Config{Servers: addrs, Watch: []string{"/x"}, Sinks: []publish.Sink{nopSink{}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.pipe.Close(context.Background()) })
	b.mu.Lock()
	b.role, b.session, b.groups = RoleActive, s, map[string]GroupState{}
	b.mu.Unlock()
	b.publishing = true
	const interval = 100 * time.Millisecond
	h := &heartbeater{b: b, interval: interval, sinks: []publish.HeartbeatSink{sink}, last: map[string]time.Time{},
		claims: map[string]*claim{}, failing: map[string]bool{}}

	t0 := time.Now()
	h.tick(t0)
	if sink.count() != 1 {
		t.Fatalf("a running bridge wrote %d heartbeats, want 1", sink.count())
	}
	p.Blackhole(true) // the client still says connected
	h.tick(t0.Add(10 * interval))
	if n := sink.count(); n != 1 {
		t.Fatalf("after a stall, with ZooKeeper silent, the bridge confirmed its values (%d heartbeats): %+v", n, sink.got[n-1])
	}
	p.Blackhole(false)
	h.tick(time.Now())
	if sink.count() != 2 {
		t.Fatalf("ZooKeeper answering again: %d heartbeats, want the round confirmed", sink.count())
	}
}
