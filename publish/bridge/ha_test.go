package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/jetstream"
)

// TestHATakeover: two bridges campaign on one HA path; the active one dies
// without draining; the standby, which observed all along, takes over,
// publishes what it held, then streams, and the JetStream stream misses no
// event of the group, not even those between the death and the takeover:
// each is there once.
func TestHATakeover(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	g, ha := groupPath(t), groupPath(t)
	s := session(t, addrs)
	cfg := func(name string) bridge.Config {
		return bridge.Config{Servers: addrs, Watch: []string{g}, HAPath: ha, Source: name, Sinks: []publish.Sink{jsSink(t, url)}}
	}
	b1, b2 := haPair(t, cfg("bridge-1"), func() bridge.Config { return cfg("bridge-2") })
	if l := metric(t, b2.Handler(), "herald_bridge_active"); l != "herald_bridge_active 0" {
		t.Errorf("standby metric: %q", l)
	}
	events, a, bCh := leaderAndWaiter(t, s, url, g)
	cCh := candidate(t, s, g, "c")
	q := queued(t, s, g, 3)
	// The active bridge dies now, perhaps before publishing the joins.
	b1.Abort()
	b1.wait(t, 20*time.Second)
	if !isErr(b1.err, bridge.ErrAborted) {
		t.Errorf("aborted bridge returned %v", b1.err)
	}
	// A change while no bridge may be active.
	if err := a.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	b := leads(t, bCh)
	waitStatus(t, b2.Bridge, 15*time.Second, "bridge-2 active", func(st bridge.Status) bool {
		return st.Role == bridge.RoleActive && len(st.NotReady()) == 0
	})
	// b must lead long enough for the active bridge to see it: a tenure
	// that begins and ends within one read of the group is reported as a
	// gap, not as events (TestTenureTooShortIsAGap).
	events.wait(t, "b elected", idOf(g, b.Node(), publish.LeaderElected))
	if err := b.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	c := leads(t, cCh)

	// The standby observed all along and held what it saw: a's loss,
	// which happened while no bridge was active, reaches the stream too.
	required := map[string]string{
		idOf(g, a.Node(), publish.LeaderElected):    "a elected",
		idOf(g, a.Node(), publish.LeaderLost):       "a lost",
		idOf(g, q[1].Node, publish.CandidateJoined): "b joined",
		idOf(g, q[2].Node, publish.CandidateJoined): "c joined",
		idOf(g, b.Node(), publish.LeaderElected):    "b elected",
		idOf(g, b.Node(), publish.LeaderLost):       "b lost",
		idOf(g, c.Node(), publish.LeaderElected):    "c elected",
	}
	for id := range required {
		events.wait(t, required[id], id)
	}
	got := events.all()
	seen := map[string]int{}
	order := []string{}
	for _, e := range got {
		seen[e.ID]++
		name, ok := required[e.ID]
		if !ok && e.Type == publish.LeaderLost && e.Snapshot && e.Previous == nil && e.Owner == nil {
			// bridge-1's snapshot of the group before anyone campaigned.
			name, ok = "no leader yet", len(order) == 0
		}
		if !ok {
			t.Errorf("event not about a change that was made: %s %+v", e.Type, e)
		}
		if e.Type == publish.LeaderElected {
			order = append(order, name)
		}
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("%s stored %d times: JetStream should have dropped the duplicate", id, n)
		}
	}
	if fmt.Sprint(order) != "[a elected b elected c elected]" {
		t.Errorf("leaders in stream order: %v", order)
	}
	for _, e := range got {
		if e.ChangeID() == idOf(g, c.Node(), publish.LeaderElected) && e.Source != "bridge-2" {
			t.Errorf("c's election published by %q, want bridge-2", e.Source)
		}
	}
	if err := b2.stop(t); err != nil {
		t.Errorf("graceful stop of bridge-2: %v", err)
	}
}

// haPair starts first and waits until it is active, then the bridge
// second makes and waits until it stands by, ready to take over.
func haPair(t *testing.T, first bridge.Config, second func() bridge.Config) (b1, b2 *running) {
	t.Helper()
	b1 = start(t, first)
	waitStatus(t, b1.Bridge, 15*time.Second, "bridge-1 active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	b2 = start(t, second())
	waitStatus(t, b2.Bridge, 15*time.Second, "bridge-2 standby and ready", func(st bridge.Status) bool {
		return st.Role == bridge.RoleStandby && len(st.NotReady()) == 0
	})
	return b1, b2
}

// leaderAndWaiter has candidate a lead group g, published to the stream
// at url, and candidate b queue behind it; it returns the stream's events,
// a's handle, and where b's comes once it leads.
func leaderAndWaiter(t *testing.T, s *elect.Session, url, g string) (*streamReader, *elect.Handle, <-chan *elect.Handle) {
	t.Helper()
	events := streamEvents(t, url, g)
	a := leads(t, candidate(t, s, g, "a"))
	events.wait(t, "a elected", idOf(g, a.Node(), publish.LeaderElected))
	bCh := candidate(t, s, g, "b")
	queued(t, s, g, 2)
	return events, a, bCh
}

// streamReader reads every event of one group stored in the HERALD stream.
type streamReader struct{ c *collector }

func streamEvents(t testing.TB, url, group string) *streamReader {
	t.Helper()
	js := natsserver.JetStream(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	es, err := jetstream.Events(ctx, js, group, jetstream.Raw())
	if err != nil {
		t.Fatalf("follow the HERALD stream: %v", err)
	}
	r := &streamReader{c: &collector{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range es.Events() {
			r.c.mu.Lock()
			r.c.events = append(r.c.events, e)
			r.c.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

func (r *streamReader) all() []publish.Event { return r.c.all() }

func (r *streamReader) wait(t testing.TB, what, id string) {
	t.Helper()
	r.c.waitCount(t, 15*time.Second, what+" in the stream", 1, func(e publish.Event) bool { return e.ChangeID() == id })
}

// A leader that comes and goes within one read of the group cannot be
// published; the next owner change must then say gap=true.
func TestTenureTooShortIsAGap(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	g := groupPath(t)
	s := session(t, addrs)
	b1 := start(t, bridge.Config{Servers: addrs, Watch: []string{g}, Source: "bridge-gap", Sinks: []publish.Sink{jsSink(t, url)}})
	waitStatus(t, b1.Bridge, 15*time.Second, "bridge ready", func(st bridge.Status) bool {
		return st.Role == bridge.RoleActive && len(st.NotReady()) == 0
	})
	events := streamEvents(t, url, g)
	a := leads(t, candidate(t, s, g, "a"))
	events.wait(t, "a elected", idOf(g, a.Node(), publish.LeaderElected))
	bCh := candidate(t, s, g, "b")
	q := queued(t, s, g, 2)
	cCh := candidate(t, s, g, "c")
	queued(t, s, g, 3)
	events.wait(t, "c joined", idOf(g, q[1].Node, publish.CandidateJoined))
	// a and b resign in one transaction's worth of time: a multi deletes
	// both, so no read can see b lead.
	if _, err := s.Conn().Multi(
		&zk.DeleteRequest{Path: g + "/" + q[0].Node, Version: -1},
		&zk.DeleteRequest{Path: g + "/" + q[1].Node, Version: -1},
	); err != nil {
		t.Fatal(err)
	}
	c := leads(t, cCh)
	events.wait(t, "c elected", idOf(g, c.Node(), publish.LeaderElected))
	for _, e := range events.all() {
		if e.ChangeID() == idOf(g, c.Node(), publish.LeaderElected) && !e.Gap {
			t.Fatalf("c's election after an unseen tenure carries no gap: %+v", e)
		}
		if e.ChangeID() == idOf(g, q[1].Node, publish.LeaderElected) {
			t.Fatalf("b's tenure was published although no read could see it")
		}
	}
	// b's own node went in the same transaction as its predecessor, so b
	// may be told it leads; it must learn within a round trip that it
	// does not (and its fenced writes fail meanwhile).
	select {
	case h := <-bCh:
		if h != nil {
			select {
			case <-h.Done():
				if h.Reason() != elect.ReasonDeleted {
					t.Fatalf("b's handle ended with %q, want %q", h.Reason(), elect.ReasonDeleted)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("b was told it leads with its node deleted, and never learned otherwise")
			}
		}
	default:
	}
	if err := b1.stop(t); err != nil {
		t.Errorf("stop: %v", err)
	}
}

// A standby drops what it held longer than --ha-replay; when it takes over
// later than that (the active bridge cut off for a session timeout), the
// groups whose events it dropped are not passed over in silence: each is
// published afresh, its current owner as a snapshot marked as a gap, so
// the stream neither misses the new owner nor hides that owners came and
// went unseen.
func TestHATakeoverPastTheReplayWindow(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	g, ha := groupPath(t), groupPath(t)
	s := session(t, addrs)
	p := proxy(t, addrs[0])
	cfg := func(name string, servers []string) bridge.Config {
		return bridge.Config{Servers: servers, Watch: []string{g}, HAPath: ha, Source: name, Sinks: []publish.Sink{jsSink(t, url)},
			SessionTimeout: 2 * time.Second, HAReplay: 200 * time.Millisecond}
	}
	_, b2 := haPair(t, cfg("bridge-1", []string{p.Addr()}), func() bridge.Config { return cfg("bridge-2", addrs) })
	events, a, bCh := leaderAndWaiter(t, s, url, g)

	// bridge-1 is cut off: it stops publishing at once, but its HA node
	// stays until its session expires (2s), so bridge-2 takes over well
	// after the replay window of what it holds meanwhile.
	p.Blackhole(true)
	if err := a.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	b := leads(t, bCh)
	waitStatus(t, b2.Bridge, 20*time.Second, "bridge-2 active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	restated := func(e publish.Event) bool {
		return e.Type == publish.LeaderElected && e.Owner != nil && e.Owner.Node == b.Node() && e.Snapshot && e.Gap && e.Source == "bridge-2"
	}
	events.c.waitCount(t, 15*time.Second, "b's tenure published afresh by bridge-2, marked as a gap", 1, restated)
	p.Blackhole(false)
}

// TestHACampaignRefusedIsNotReady: a bridge whose HA election refuses it
// (an ACL it does not pass) can never take over: it is not ready, and
// says why, instead of passing for a standby. Once the ACL admits it, it
// joins and is ready.
func TestHACampaignRefusedIsNotReady(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	g, ha := groupPath(t), groupPath(t)
	s := session(t, addrs)
	if _, err := s.Conn().Create(path.Dir(ha), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	other := zk.DigestACL(zk.PermAll, "other", "secret")
	if _, err := s.Conn().Create(ha, nil, 0, append(other, zk.WorldACL(zk.PermRead)...)); err != nil {
		t.Fatal(err)
	}
	r := start(t, bridge.Config{Servers: addrs, Watch: []string{g}, HAPath: ha, Source: "refused", Sinks: []publish.Sink{jsSink(t, url)}})
	st := waitStatus(t, r.Bridge, 15*time.Second, "the campaign's refusal reported", func(st bridge.Status) bool { return st.HAError != "" })
	why := strings.Join(st.NotReady(), "; ")
	if !strings.Contains(why, "cannot join the HA election") || !strings.Contains(why, "not allowed") {
		t.Fatalf("not ready because %q; want the refused campaign named", why)
	}
	if err := s.Conn().AddAuth("digest", []byte("other:secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Conn().SetACL(ha, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r.Bridge, 20*time.Second, "joined and active once admitted", func(st bridge.Status) bool {
		return st.HAError == "" && st.Role == bridge.RoleActive && len(st.NotReady()) == 0
	})
}

// A standby that takes over long after the replay window does not mark as
// gaps the changes its predecessor stored: the shared store (the owners
// bucket) holds the owner the dropped events left, so the group is read
// afresh without a gap there, and nothing counts towards the gap alert.
// Its own audit log, which never got those changes, marks the group's
// next event as a gap.
func TestHATakeoverPastTheReplayWindowStoredByThePredecessor(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	g, ha, empty := groupPath(t), groupPath(t), groupPath(t)
	s := session(t, addrs)
	// A group nobody ever joins: its only event is the start snapshot,
	// no owner, which the owners bucket keeps no key of.
	for _, p := range []string{path.Dir(empty), empty} {
		if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	cfg := func(name string, extra ...publish.Sink) bridge.Config {
		return bridge.Config{Servers: addrs, Watch: []string{g, empty}, HAPath: ha, Source: name, Sinks: append([]publish.Sink{jsSink(t, url)}, extra...),
			SessionTimeout: 2 * time.Second, HAReplay: 200 * time.Millisecond, Logger: testLogger(t)}
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	as, err := audit.New(path)
	if err != nil {
		t.Fatal(err)
	}
	b1, b2 := haPair(t, cfg("bridge-1"), func() bridge.Config { return cfg("bridge-2", as) })
	events, a, bCh := leaderAndWaiter(t, s, url, g)
	if err := a.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	b := leads(t, bCh)
	events.wait(t, "b elected, stored by bridge-1", idOf(g, b.Node(), publish.LeaderElected))
	time.Sleep(500 * time.Millisecond) // past bridge-2's replay window: what it holds of g is dropped

	b1.Abort()
	b1.wait(t, 20*time.Second)
	waitStatus(t, b2.Bridge, 20*time.Second, "bridge-2 active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	// The afresh snapshot carries the id of bridge-1's event, so the
	// stream drops it as a copy; the owners bucket takes it as bridge-2
	// confirming b.
	deadline := time.Now().Add(15 * time.Second)
	for natsOwnerSource(t, url, g) != "bridge-2" {
		if time.Now().After(deadline) {
			t.Fatalf("b's tenure not read afresh by bridge-2 into the owners bucket within 15 s (source %q)", natsOwnerSource(t, url, g))
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not ordering
	}
	for _, e := range events.all() {
		if e.Source == "bridge-2" && e.Gap {
			t.Errorf("bridge-2 marked a gap in the stream although bridge-1 stored every change: %+v", e)
		}
	}
	for _, group := range []string{g, empty} {
		if v, _ := metricValue(t, b2.Handler(), `herald_group_gaps_total{group="`+group+`"}`); v != 0 {
			t.Errorf("herald_group_gaps_total of %s = %v on bridge-2, want 0", group, v)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var first *publish.Event
	for deadline := time.Now().Add(10 * time.Second); first == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		evs, err := audit.ReadAll(ctx, path, nil)
		if err != nil {
			t.Fatalf("read bridge-2's audit log: %v", err)
		}
		for i := range evs {
			if evs[i].Group == g && evs[i].Source == "bridge-2" {
				first = &evs[i]
				break
			}
		}
	}
	if first == nil || !first.Gap {
		t.Errorf("bridge-2's audit log, which never got b's election: first event of the group %+v, want it marked as a gap", first)
	}
	if err := b2.stop(t); err != nil {
		t.Errorf("graceful stop of bridge-2: %v", err)
	}
}
