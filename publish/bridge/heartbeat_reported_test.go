package bridge_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// store is a sink that keeps, like an owners bucket, whether each group's
// value names an owner, starting from what it held before the bridge
// started, and records every active heartbeat that confirms an owner
// value of a group in bad.
type store struct {
	mu    sync.Mutex
	owned map[string]bool
	bad   []string
	ended bool // an event said the group has no owner
}

func (s *store) Name() string                  { return "store" }
func (s *store) Connect(context.Context) error { return nil }
func (s *store) Close() error                  { return nil }
func (s *store) Write(_ context.Context, evs []publish.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range evs {
		s.owned[e.Group] = e.Owner != nil
		s.ended = s.ended || e.Owner == nil
	}
	return nil
}

func (s *store) WriteHeartbeat(_ context.Context, h publish.Heartbeat) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.State != publish.BridgeActive {
		return nil
	}
	for g, owned := range s.owned {
		if _, un := h.Unconfirmed[g]; owned && !un && h.Scope.Covers(g) {
			s.bad = append(s.bad, fmt.Sprintf("heartbeat dated %s confirms the owner the store names of %s, deleted before the bridge started",
				h.Time.Format(time.RFC3339Nano), g))
		}
	}
	return nil
}

// TestHeartbeatConfirmsNoOwnerOfAGroupGoneWhileDown (found by an
// adversarial test): the store names an owner of a group below a
// discover root, and the group is gone (with its root, or alone) when
// the bridge starts. Its end is published once the roots have been
// looked at (adoptReported); no active heartbeat may confirm the old
// owner before that. The heartbeats waited for the roots' first look,
// not for adoptReported, which looked only every 100 ms: the first
// heartbeat confirmed the gone owner as current.
func TestHeartbeatConfirmsNoOwnerOfAGroupGoneWhileDown(t *testing.T) {
	for _, tc := range []struct {
		name     string
		makeRoot bool
	}{{"root missing", false}, {"root empty", true}} {
		t.Run(tc.name, func(t *testing.T) {
			root := groupPath(t)
			addrs := zkAddrs(t)
			makeOpen(t, session(t, addrs), []string{"/t", root}[:map[bool]int{false: 1, true: 2}[tc.makeRoot]]...)
			g := root + "/g"
			st := &store{owned: map[string]bool{g: true}}
			start(t, bridge.Config{Servers: addrs, Discover: []string{root}, Sinks: []publish.Sink{st}, Heartbeat: 10 * time.Millisecond,
				Resume: map[string]bridge.Resume{g: {Owner: "lock-0000000000", Zxid: 1}}})
			waitFor(t, 30*time.Second, "the gone group's end published", func() bool {
				st.mu.Lock()
				defer st.mu.Unlock()
				return st.ended
			})
			time.Sleep(100 * time.Millisecond) // heartbeats after the end, checked too
			st.mu.Lock()
			defer st.mu.Unlock()
			for _, b := range st.bad {
				t.Error(b)
			}
		})
	}
}
