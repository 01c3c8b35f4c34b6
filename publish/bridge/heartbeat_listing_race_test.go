package bridge_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestHeartbeatWaitsForAWatchThatFiredWhileItsRootWasHandled (found by an
// adversarial test): a discoverer's next watch, armed by a listing, may
// fire while it still handles that listing (a burst of sequentially named
// children, each looked at before it is taken as a group); a heartbeat
// proved meanwhile waited only for the discoverer to move on from the
// watch before, and confirmed, as having no owner, a group made before
// its proof that the next listing would have found. Noise children widen
// that handling; owned groups are made among them.
func TestHeartbeatWaitsForAWatchThatFiredWhileItsRootWasHandled(t *testing.T) {
	root, addrs, s := madeRoot(t)
	l := newLedger()
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, Sinks: []publish.Sink{l}, Heartbeat: 10 * time.Millisecond})
	waitStatus(t, r.Bridge, 30*time.Second, "active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		makeNoise(t, s, root, stop)
	}()
	owner := session(t, addrs)
	const n = 100
	for i := range n {
		g := fmt.Sprintf("%s/svc-%d", root, i)
		acquire(t, owner, g)
		l.existed(g, time.Now())
		time.Sleep(3 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	l.waitOwned(t, 60*time.Second, n)
	// A loaded machine may hold rounds back while the noise is listed:
	// wait for one dated after the groups were made, checked too.
	waitFor(t, 30*time.Second, "an active heartbeat dated after a group was made", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.checked > 0
	})
	l.reportBad(t)
}

// makeNoise makes, until stop, bursts of 48 children of root named as
// sequence nodes (each stat'ed by the discoverer before it takes it as a
// group), at most 3000 of them.
func makeNoise(t *testing.T, s *elect.Session, root string, stop <-chan struct{}) {
	for i := 0; i < 3000; i += 48 {
		select {
		case <-stop:
			return
		default:
		}
		ops := make([]any, 0, 48)
		for j := range 48 {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/q-%010d", root, i+j), Acl: zk.WorldACL(zk.PermAll)})
		}
		if _, err := s.Conn().Multi(ops...); err != nil {
			t.Error(err)
			return
		}
		time.Sleep(4 * time.Millisecond)
	}
}
