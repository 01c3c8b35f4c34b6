package elect_test

import (
	"context"
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
)

// TestChangeInABlipIsNotDatedAtTheReconnect: an observer busy through a
// short loss of its connection (here its reader did not read; in a bridge,
// the Unknowns of many groups ahead of it) never takes the suspended turn
// that says Unknown. The owners that left while the connection was down
// reach it on the new connection, as the events ZooKeeper sends when the
// client sets its watches again, and it reads them only after the
// reconnect: each such loss must say it was seen late (NotBefore, no
// later than the loss), not be dated exactly at the read. Both Observe and
// ObserveMany (many groups, a few of them changed in the blip).
func TestChangeInABlipIsNotDatedAtTheReconnect(t *testing.T) {
	for _, tc := range []struct {
		name            string
		groups, changed int
	}{{"Observe", 1, 1}, {"ObserveMany", 60, 12}} {
		t.Run(tc.name, func(t *testing.T) { blipTest(t, tc.groups, tc.changed, false) })
	}
}

// TestChangeLongAfterABlipIsExact: ObserveMany, busy through a short loss,
// reads again after the reconnect only the groups whose watches fired.
// A group that did not change in the loss, and whose owner goes well after
// it, saw that change as it happened: it is not marked seen late from
// before the loss.
func TestChangeLongAfterABlipIsExact(t *testing.T) {
	blipTest(t, 60, 12, true)
}

// blipTest observes n groups and takes the owners of the last changed of
// them away while the observer's connection is down; with live, the owner
// of a group not changed then goes after the reconnect.
func blipTest(t *testing.T, n, changed int, live bool) {
	addrs := sharedAddrs(t)
	base := groupPath(t)
	p := proxyTo(t, addrs[0])
	obs := session(t, []string{p.Addr()}, elect.WithSessionTimeout(10*time.Second))
	a, b := session(t, addrs), session(t, addrs)
	ctx := ctxT(t, 60*time.Second)
	groups := make([]string, n)
	handles := make([]*elect.Handle, n)
	for i := range n {
		groups[i] = fmt.Sprintf("%s/g%02d", base, i)
		e, _ := elect.NewElection(a, groups[i], elect.CreateParents())
		h, err := e.Campaign(ctx, fmt.Sprintf("a%02d", i))
		if err != nil {
			t.Fatal(err)
		}
		handles[i] = h
	}
	began := time.Now()
	src := blipObserver(t, obs, groups)
	for range n {
		expect(t, src, elect.Snapshot, nil)
	}
	// Keep the observer busy: a waiter joins the first group(s), and
	// nobody reads the Joined changes until the connection is back.
	busy := min(n, 2)
	for i := range busy {
		e, _ := elect.NewElection(b, groups[i])
		go func() { _, _ = e.Campaign(ctx, fmt.Sprintf("b%02d", i)) }()
		waitQueue(t, e, 2)
	}
	time.Sleep(200 * time.Millisecond)
	p.Refuse(true)
	p.Cut()
	eventually(t, 5*time.Second, "the observer's session suspended", func() bool {
		st, _ := obs.State()
		return st == elect.StateSuspended
	})
	gone := map[string]time.Time{}
	for i := n - changed; i < n; i++ {
		if err := handles[i].Resign(ctx); err != nil {
			t.Fatal(err)
		}
		gone[groups[i]] = time.Now()
	}
	endBlip(t, p, obs)
	checkBlipChanges(t, src, gone, began)
	if live {
		liveChangeExact(t, src, groups[n-changed-1], handles[n-changed-1])
	}
}

// liveChangeExact reads what src says until it is quiet, then takes the
// owner of group away: its loss is not marked seen late from before.
func liveChangeExact(t *testing.T, src source, group string, h *elect.Handle) {
	for quiet := false; !quiet; {
		select {
		case <-src.Changes():
		case <-time.After(time.Second):
			quiet = true
		}
	}
	at := time.Now()
	if err := h.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	for {
		c := next(t, src)
		if c.Group != group || c.Kind != elect.OwnerChanged {
			continue
		}
		if !c.NotBefore.IsZero() && c.NotBefore.Before(at) {
			t.Errorf("loss of %s, which went at %v, marked seen late not before %v (%v before it went)",
				c.Previous.ID, at.Format("15:04:05.000"), c.NotBefore.Format("15:04:05.000"), at.Sub(c.NotBefore).Round(time.Millisecond))
		}
		return
	}
}

// blipObserver observes groups with no buffer and few workers: a change
// nobody reads holds the observer up.
func blipObserver(t *testing.T, s *elect.Session, groups []string) source {
	ctx, cancel := context.WithCancel(context.Background())
	if len(groups) == 1 {
		o, err := elect.Observe(ctx, s, groups[0], elect.Buffer(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); o.Wait() })
		return o
	}
	m, err := elect.ObserveMany(ctx, s, elect.Workers(2), elect.ManyBuffer(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-m.Done() })
	for _, g := range groups {
		if err := m.Add(g); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// checkBlipChanges reads what the observer says until every group of gone
// has told of its loss: as a loss seen late no later than it happened, or
// as Unknown and a snapshot. A loss seen late is not marked from before
// the observation began.
func checkBlipChanges(t *testing.T, src source, gone map[string]time.Time, began time.Time) {
	told, exact := 0, 0
	for told < len(gone) {
		c := next(t, src)
		at, ok := gone[c.Group]
		if !ok || c.Kind == elect.Joined || c.Kind == elect.Left {
			continue
		}
		told++
		switch {
		case c.Kind == elect.Unknown:
			told-- // the snapshot after it tells
		case c.Kind == elect.Snapshot:
		case c.Kind != elect.OwnerChanged || c.Previous == nil:
			t.Errorf("%s: %s change %+v; want the loss of its owner", c.Group, c.Kind, c)
		case c.NotBefore.IsZero():
			exact++
			t.Errorf("%s: loss of %s, which went at %v during the blip, reported as seen at once (%v later)",
				c.Group, c.Previous.ID, at.Format("15:04:05.000"), time.Since(at).Round(time.Millisecond))
		case c.NotBefore.After(at) || c.NotBefore.Before(began):
			t.Errorf("%s: loss of %s seen late, not before %v; it went at %v, observed from %v", c.Group, c.Previous.ID, c.NotBefore, at, began)
		default:
			t.Logf("%s: loss seen late, not before %v before it went", c.Group, at.Sub(c.NotBefore).Round(time.Millisecond))
		}
	}
	t.Logf("%d of %d losses in the blip reported as exact", exact, len(gone))
}

// TestSingleChangeInABlipIsNotDatedAtTheReconnect is the same for
// ObserveSingle: a leader that went while the connection was down, read
// by an observer that was busy throughout, is a loss seen late.
func TestSingleChangeInABlipIsNotDatedAtTheReconnect(t *testing.T) {
	addrs := sharedAddrs(t)
	p := proxyTo(t, addrs[0])
	obs := session(t, []string{p.Addr()}, elect.WithSessionTimeout(10*time.Second))
	w := session(t, addrs)
	leader := groupPath(t) + "/loadbalance/leader"
	mkdirs(t, w.Conn(), path.Dir(leader))
	pulsar := func(n int) []byte {
		return fmt.Appendf(nil, `{"brokerId":"broker-%d:8080","serviceUrl":"http://broker-%d:8080"}`, n, n)
	}
	if _, err := w.Conn().Create(leader, pulsar(1), zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	o, err := elect.ObserveSingle(ctx, obs, leader, elect.SingleNodeFor(leader), elect.Buffer(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); o.Wait() })
	expect(t, o.Observer, elect.Snapshot, ownerIs("broker-1:8080"))
	// Broker 2 takes over; nobody reads it until the connection is back.
	if _, err := w.Conn().Multi(
		&zk.DeleteRequest{Path: leader, Version: -1},
		&zk.CreateRequest{Path: leader, Data: pulsar(2), Acl: openACL, Flags: zk.FlagEphemeral},
	); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	p.Refuse(true)
	p.Cut()
	eventually(t, 5*time.Second, "the observer's session suspended", func() bool {
		st, _ := obs.State()
		return st == elect.StateSuspended
	})
	if err := w.Conn().Delete(leader, -1); err != nil {
		t.Fatal(err)
	}
	gone := time.Now()
	endBlip(t, p, obs)
	expect(t, o.Observer, elect.OwnerChanged, ownerIs("broker-2:8080"))
	checkBlipChanges(t, o.Observer, map[string]time.Time{leader: gone}, began)
}

// endBlip lets the observer's session obs connect through p again, a
// moment after the change made while it could not, and waits until it
// has and the events it missed have had time to come.
func endBlip(t *testing.T, p *faultproxy.Proxy, obs *elect.Session) {
	t.Helper()
	time.Sleep(300 * time.Millisecond)
	p.Refuse(false)
	eventually(t, 5*time.Second, "the observer's session back", func() bool {
		st, _ := obs.State()
		return st == elect.StateConnected
	})
	time.Sleep(500 * time.Millisecond)
}
