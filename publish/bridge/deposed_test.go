package bridge_test

import (
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestDeposedBridgeRestatesNothing: an HA bridge that led, then lost
// leadership (cut off from ZooKeeper) and stands by, holds no groups'
// state: when the owners bucket is lost, it must not write what it knew
// when it led (an owner long gone) as current. Only the active bridge
// states the groups again, and a group without an owner stays so.
func TestDeposedBridgeRestatesNothing(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	g, ha := groupPath(t), groupPath(t)
	s := session(t, addrs)
	a := leads(t, candidate(t, s, g, "a"))
	p := proxy(t, addrs[0])
	// ha-1 looks at its store often; ha-2, the active one, does not, so
	// that nothing it writes hides what ha-1 would.
	cfg := func(name string, servers []string, check time.Duration) bridge.Config {
		return bridge.Config{Servers: servers, SessionTimeout: 3 * time.Second, Watch: []string{g}, HAPath: ha, Source: name, Sinks: []publish.Sink{jsSink(t, url)},
			PipelineOptions: []publish.Option{publish.WithStoreCheck(check)}}
	}
	b1 := start(t, cfg("ha-1", []string{p.Addr()}, 100*time.Millisecond))
	waitStatus(t, b1.Bridge, 15*time.Second, "ha-1 active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	b2 := start(t, cfg("ha-2", addrs, 0))
	waitStatus(t, b2.Bridge, 15*time.Second, "ha-2 standby and ready", func(st bridge.Status) bool {
		return st.Role == bridge.RoleStandby && len(st.NotReady()) == 0
	})
	waitFor(t, 15*time.Second, "a in the bucket", func() bool { return natsOwner(t, url, g) == "a" })

	p.Blackhole(true) // ha-1 is cut off: ha-2 takes over once ha-1's session is gone
	waitStatus(t, b2.Bridge, 30*time.Second, "ha-2 active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	p.Blackhole(false)
	waitStatus(t, b1.Bridge, 30*time.Second, "ha-1 standing by again", func(st bridge.Status) bool {
		return st.Role == bridge.RoleStandby && len(st.NotReady()) == 0
	})
	if err := a.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "no owner in the bucket", func() bool { return natsOwner(t, url, g) == "" })

	deleteBucket(t, url, false)
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if o := natsOwner(t, url, g); o != "" {
			t.Fatalf("the owners bucket, made again, names %s, who released long ago: the deposed bridge stated what it knew when it led", o)
		}
	}
}

// TestRetakenBridgeRestatesEveryGroup: an HA bridge that led, stood by
// with its session and observation intact (an operator deleted its HA
// node) and leads again, knows every group when its owners bucket is lost
// afterwards: a group that did not change while it stood by, and one
// where only a waiter joined, are both restated with their owners.
// Before, it knew only what it had held while standing by: the first
// group was missing from the bucket made again, and the second stated
// without an owner.
func TestRetakenBridgeRestatesEveryGroup(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	base, ha := groupPath(t), groupPath(t)
	quiet, busy := base+"/quiet", base+"/busy"
	s := session(t, addrs)
	leads(t, candidate(t, s, quiet, "a"))
	leads(t, candidate(t, s, busy, "b"))
	cfg := func(name string) bridge.Config {
		return bridge.Config{Servers: addrs, Watch: []string{quiet, busy}, HAPath: ha, Source: name, Logger: testLogger(t),
			Sinks: []publish.Sink{jsSink(t, url)}, PipelineOptions: []publish.Option{publish.WithStoreCheck(100 * time.Millisecond)}}
	}
	b1 := start(t, cfg("ha-1"))
	waitStatus(t, b1.Bridge, 15*time.Second, "ha-1 active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	b2 := start(t, cfg("ha-2"))
	waitStatus(t, b2.Bridge, 15*time.Second, "ha-2 standby and ready", func(st bridge.Status) bool {
		return st.Role == bridge.RoleStandby && len(st.NotReady()) == 0
	})
	waitFor(t, 15*time.Second, "both owners in the bucket", func() bool { return natsOwner(t, url, quiet) == "a" && natsOwner(t, url, busy) == "b" })

	// ha-1's HA node deleted: it stands by, on the same session and the
	// same observation of the groups; ha-2 leads.
	nodes := queued(t, s, ha, 2)
	if err := s.Conn().Delete(ha+"/"+nodes[0].Node, -1); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, b2.Bridge, 20*time.Second, "ha-2 active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	waitStatus(t, b1.Bridge, 20*time.Second, "ha-1 standing by", func(st bridge.Status) bool { return st.Role == bridge.RoleStandby })
	candidate(t, s, busy, "c")
	queued(t, s, busy, 2)
	queued(t, s, ha, 2)

	// ha-2 stops; ha-1 leads again.
	if err := b2.stop(t); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, b1.Bridge, 20*time.Second, "ha-1 active again", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })

	deleteBucket(t, url, false)
	waitFor(t, restateBound, "both owners restated in the bucket made again", func() bool {
		return natsOwner(t, url, quiet) == "a" && natsOwner(t, url, busy) == "b"
	})
}

// TestHATakeoverTrimmedGroupKnowsItsOwner: a standby that takes over with
// some of a group's held events dropped (older than the replay window)
// and a later one kept (a waiter joined) knows the group's owner when the
// owners bucket is lost afterwards. Before, it knew the group only from
// the events it kept: the bucket made again said the group had no owner.
func TestHATakeoverTrimmedGroupKnowsItsOwner(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	g, ha := groupPath(t), groupPath(t)
	s := session(t, addrs)
	leads(t, candidate(t, s, g, "a"))
	p := proxy(t, addrs[0])
	const replay = 5 * time.Second
	cfg := func(name string, servers []string) bridge.Config {
		return bridge.Config{Servers: servers, Watch: []string{g}, HAPath: ha, Source: name, Logger: testLogger(t),
			Sinks: []publish.Sink{jsSink(t, url)}, SessionTimeout: 2 * time.Second, HAReplay: replay,
			PipelineOptions: []publish.Option{publish.WithStoreCheck(100 * time.Millisecond)}}
	}
	b1 := start(t, cfg("ha-1", []string{p.Addr()}))
	waitStatus(t, b1.Bridge, 15*time.Second, "ha-1 active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	b2 := start(t, cfg("ha-2", addrs))
	waitStatus(t, b2.Bridge, 15*time.Second, "ha-2 standby and ready", func(st bridge.Status) bool {
		return st.Role == bridge.RoleStandby && len(st.NotReady()) == 0
	})
	waitFor(t, 15*time.Second, "a in the bucket", func() bool { return natsOwner(t, url, g) == "a" })
	time.Sleep(replay + time.Second) // ha-2's snapshot of the group is now older than the window
	candidate(t, s, g, "c")
	queued(t, s, g, 2)

	p.Blackhole(true) // ha-1 cut off: ha-2 takes over once its session expires, the join still held
	waitStatus(t, b2.Bridge, 20*time.Second, "ha-2 active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	time.Sleep(500 * time.Millisecond) // the group read afresh
	deleteBucket(t, url, false)
	waitFor(t, restateBound, "a restated in the bucket made again", func() bool { return natsOwner(t, url, g) == "a" })
	p.Blackhole(false)
}

// TestHABridgeDrainsOnStop: an active HA bridge that is stopped still
// leads until it resigns: it drains what the sinks had still to write
// (here JetStream, down when the change came and back during the drain;
// one event a batch, so that the change's second event waits queued),
// rather than dropping it as a deposed bridge does.
func TestHABridgeDrainsOnStop(t *testing.T) {
	c := changeWhileNATSDown(t, "draining", 20*time.Second)
	stopped := make(chan error, 1)
	go func() { stopped <- c.r.stop(t) }()
	time.Sleep(time.Second) // draining, the server down
	c.ns.Restart(t)
	<-stopped
	waitFor(t, 10*time.Second, "b in the bucket, drained", func() bool { return natsOwner(t, c.ns.URL(), c.g) == "b" })
}

// downNATSChange is what changeWhileNATSDown leaves: an active HA bridge
// whose JetStream server is down, with group g's change from owner a to
// owner b in its backlog.
type downNATSChange struct {
	r     *running
	ns    *natsserver.Server
	s     *elect.Session
	g, ha string
}

// changeWhileNATSDown starts a lone HA bridge (source, drain) publishing
// a group to JetStream one event a batch, so that a change's second event
// waits queued; stops the server; and has the group's owner change.
func changeWhileNATSDown(t *testing.T, source string, drain time.Duration) downNATSChange {
	t.Helper()
	addrs := zkAddrs(t)
	ns := natsserverStart(t)
	url := ns.URL()
	g, ha := groupPath(t), groupPath(t)
	s := session(t, addrs)
	a := leads(t, candidate(t, s, g, "a"))
	bCh := candidate(t, s, g, "b")
	queued(t, s, g, 2)
	r := start(t, bridge.Config{Servers: addrs, Watch: []string{g}, HAPath: ha, Source: source, Sinks: []publish.Sink{jsSink(t, url)},
		PipelineOptions: []publish.Option{publish.WithBatchSize(1)}, DrainTimeout: drain})
	waitStatus(t, r.Bridge, 15*time.Second, "active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive && len(st.NotReady()) == 0 })
	waitFor(t, 15*time.Second, "a in the bucket", func() bool { return natsOwner(t, url, g) == "a" })

	ns.Shutdown()
	if err := a.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	leads(t, bCh)
	waitFor(t, 10*time.Second, "b's election queued behind the first event", func() bool { return r.Status().Sinks["jetstream"].Backlog > 1 })
	return downNATSChange{r: r, ns: ns, s: s, g: g, ha: ha}
}

// TestReLeadAfterDropRepublishes: a lone HA bridge deposed with its
// session intact (its HA node deleted) while JetStream was down drops the
// change it had queued; leading again (there is no other copy), it
// publishes the group afresh, marked as a gap. Before, campaigning again
// forgot which groups it had dropped, and the bucket kept the old owner.
func TestReLeadAfterDropRepublishes(t *testing.T) {
	c := changeWhileNATSDown(t, "solo", 0)
	nodes := queued(t, c.s, c.ha, 1)
	if err := c.s.Conn().Delete(c.ha+"/"+nodes[0].Node, -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the backlog dropped", func() bool { return c.r.Pipeline().Stats().Sinks["jetstream"].Dropped > 0 })
	waitStatus(t, c.r.Bridge, 15*time.Second, "active again", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	c.ns.Restart(t)
	waitFor(t, 20*time.Second, "b in the bucket, the group published afresh", func() bool { return natsOwner(t, c.ns.URL(), c.g) == "b" })
}
