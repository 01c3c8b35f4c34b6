package bridge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

func proxy(t testing.TB, target string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestConnectionLost: while the connection to ZooKeeper is partitioned the
// group is unknown, /readyz says 503 and why, and nothing is published;
// after the partition heals the snapshot is published again.
func TestConnectionLost(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	g := groupPath(t)
	s := session(t, addrs)
	a := leads(t, candidate(t, s, g, "a"))
	sub := collect(t, url, "herald.*."+publish.MustTokens(g))
	p := proxy(t, addrs[0])

	r := start(t, bridge.Config{Servers: []string{p.Addr()}, SessionTimeout: 6 * time.Second, Watch: []string{g}, Sinks: []publish.Sink{jsSink(t, url)}})
	elected := isType(publish.LeaderElected, a.Node())
	sub.waitCount(t, 15*time.Second, "the snapshot", 1, elected)
	waitStatus(t, r.Bridge, 5*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 })

	p.Blackhole(true)
	st := waitStatus(t, r.Bridge, 10*time.Second, "group unknown", func(st bridge.Status) bool { return st.Groups[g] == bridge.GroupUnknown })
	code, body := get(t, r.Handler(), "/readyz")
	if code != 503 || !strings.Contains(body, "not live") || !strings.Contains(body, g) {
		t.Errorf("/readyz while partitioned = %d %s; want 503 naming the unknown group", code, body)
	}
	if l := metric(t, r.Handler(), "herald_groups_unknown"); l != "herald_groups_unknown 1" {
		t.Errorf("metric while partitioned: %q", l)
	}
	if st.Session != "suspended" {
		t.Errorf("session while partitioned: %s, want suspended", st.Session)
	}
	// The live page shows the last owner as such: stale, not current.
	if code, page := get(t, r.Handler(), "/"); code != 200 || !strings.Contains(page, `class="state state-stale"`) || !strings.Contains(page, "the last one seen, not the current one") {
		t.Errorf("live page while partitioned = %d; want the group marked stale:\n%s", code, page)
	}
	p.Blackhole(false)

	sub.waitCount(t, 15*time.Second, "the snapshot again after the partition", 2, elected)
	waitStatus(t, r.Bridge, 5*time.Second, "ready again", func(st bridge.Status) bool { return len(st.NotReady()) == 0 })
	if _, page := get(t, r.Handler(), "/"); strings.Contains(page, `class="state state-stale"`) || !strings.Contains(page, `class="state state-held"`) {
		t.Errorf("live page after the partition still marks the group stale, or not held")
	}
	if st := r.Status(); st.Sessions != 1 {
		t.Errorf("the session should have survived: %d sessions", st.Sessions)
	}
	for _, e := range sub.all() {
		if e.ChangeID() != idOf(g, a.Node(), publish.LeaderElected) || !e.Snapshot {
			t.Errorf("unexpected event: %+v", e)
		}
	}
}

// TestSessionExpiry: when the session expires the bridge opens a new one
// and publishes a snapshot that shows what changed meanwhile.
func TestSessionExpiry(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	g := groupPath(t)
	s := session(t, addrs)
	a := leads(t, candidate(t, s, g, "a"))
	bCh := candidate(t, s, g, "b")
	queued(t, s, g, 2)
	sub := collect(t, url, "herald.*."+publish.MustTokens(g))
	p := proxy(t, addrs[0])

	began := time.Now()
	r := start(t, bridge.Config{Servers: []string{p.Addr()}, SessionTimeout: time.Second, MaxRetryWait: 200 * time.Millisecond,
		Watch: []string{g}, Sinks: []publish.Sink{jsSink(t, url)}})
	sub.waitCount(t, 15*time.Second, "the snapshot", 1, isType(publish.LeaderElected, a.Node()))
	first := r.Status().SessionID
	// A sync the ZooKeeper leader answers after the bridge's read is what
	// vouches for it (one every eighth of the session timeout).
	time.Sleep(time.Second/8 + 200*time.Millisecond)

	cut := time.Now()
	p.Blackhole(true)
	waitStatus(t, r.Bridge, 10*time.Second, "session lost", func(st bridge.Status) bool { return st.Session == "lost" })
	if code, _ := get(t, r.Handler(), "/readyz"); code != 503 {
		t.Errorf("/readyz with the session lost = %d, want 503", code)
	}
	// A change nobody observes: the snapshot of the new session must show it.
	if err := a.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	b := leads(t, bCh)
	p.Blackhole(false)

	st := waitStatus(t, r.Bridge, 15*time.Second, "a new session, ready", func(st bridge.Status) bool {
		return st.Sessions == 2 && len(st.NotReady()) == 0
	})
	if st.SessionID == first {
		t.Errorf("session id unchanged: %s", first)
	}
	sub.waitCount(t, 10*time.Second, "the new session's snapshot", 1, func(e publish.Event) bool {
		return e.Snapshot && e.ChangeID() == idOf(g, b.Node(), publish.LeaderElected)
	})
	// It names the owner the old session last saw, and when the old
	// session last vouched for it: the history's end of a's tenure.
	for _, e := range sub.all() {
		if e.Snapshot && e.Owner != nil && e.Owner.Node == b.Node() {
			if l := e.LastSeen; l == nil || l.Owner.Node != a.Node() || l.At.Before(began) || l.At.After(cut) {
				t.Errorf("the new session's snapshot: last_seen %+v; want %s, between %v and %v", l, a.Node(), began, cut)
			}
		}
	}
	if l := metric(t, r.Handler(), "herald_zk_sessions_total"); l != "herald_zk_sessions_total 2" {
		t.Errorf("metric: %q", l)
	}
}

// TestDrainBound: a stop with a sink down returns within the drain bound
// and says how many events were left.
func TestDrainBound(t *testing.T) {
	addrs := zkAddrs(t)
	nsrv := natsserverStart(t)
	g := groupPath(t)
	s := session(t, addrs)
	r := start(t, bridge.Config{Servers: addrs, Watch: []string{g}, Sinks: []publish.Sink{jsSink(t, nsrv.URL())}, DrainTimeout: 300 * time.Millisecond})
	waitStatus(t, r.Bridge, 15*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 })
	nsrv.Shutdown()
	leads(t, candidate(t, s, g, "a"))
	waitFor(t, 10*time.Second, "the election's events queued", func() bool { return r.Pipeline().Stats().Published >= 2 })
	start := time.Now()
	err := r.stop(t)
	if !isErr(err, publish.ErrUndelivered) {
		t.Fatalf("stop with NATS down: %v, want ErrUndelivered", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stop took %v with a drain bound of 300ms", d)
	}
	if !strings.Contains(err.Error(), "jetstream=") {
		t.Errorf("error does not name the sink: %v", err)
	}
}

// TestUnreachable: a sink or ZooKeeper that cannot be reached at start is
// reported, naming what was tried.
func TestUnreachable(t *testing.T) {
	t.Run("sink", func(t *testing.T) {
		addrs := zkAddrs(t)
		r := start(t, bridge.Config{Servers: addrs, Watch: []string{"/x"}, ConnectTimeout: 500 * time.Millisecond,
			Sinks: []publish.Sink{jsSink(t, "nats://127.0.0.1:1")}})
		r.wait(t, 20*time.Second)
		if !isErr(r.err, bridge.ErrSinkUnreachable) || !strings.Contains(r.err.Error(), "127.0.0.1:1") || !strings.Contains(r.err.Error(), "attempts") {
			t.Errorf("Run: %v; want ErrSinkUnreachable naming the URL and the attempts", r.err)
		}
		// The sink's own advice, once: no generic one repeated after it.
		if msg := r.err.Error(); strings.Count(msg, "check") != 1 {
			t.Errorf("Run: %v; want one piece of advice", r.err)
		}
	})
	// Stopped while still trying: the error carries the sink's last real
	// answer, not only the attempt the stop cut short.
	t.Run("sink, stopped while trying", func(t *testing.T) {
		addrs := zkAddrs(t)
		r := start(t, bridge.Config{Servers: addrs, Watch: []string{"/x"}, ConnectTimeout: time.Minute,
			Sinks: []publish.Sink{jsSink(t, "nats://127.0.0.1:1")}})
		time.Sleep(time.Second) // a few refused attempts
		err := r.stop(t)
		if !isErr(err, bridge.ErrSinkUnreachable) || !isErr(err, context.Canceled) || !strings.Contains(err.Error(), "no servers available") {
			t.Errorf("Run: %v; want ErrSinkUnreachable saying it was stopped, with NATS's last answer", err)
		}
	})
	// Replicas a single server cannot keep: no retry mends that, so the
	// bridge says what to do at once instead of retrying for the whole
	// connect timeout.
	t.Run("replicas", func(t *testing.T) {
		url := natsURL(t)
		sink, err := jetstream.New(jetstream.Config{Replicas: 3, Conn: natssink.Options{URL: url, Name: t.Name()}})
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		r := start(t, bridge.Config{Servers: zkAddrs(t), Watch: []string{"/x"}, ConnectTimeout: 30 * time.Second, Sinks: []publish.Sink{sink}})
		r.wait(t, 20*time.Second)
		if !isErr(r.err, bridge.ErrSinkSettings) || !isErr(r.err, publish.ErrSinkConfig) || !strings.Contains(r.err.Error(), "--nats-replicas 1") {
			t.Errorf("Run: %v; want ErrSinkConfig saying to use --nats-replicas 1", r.err)
		}
		if d := time.Since(began); d > 10*time.Second {
			t.Errorf("the refusal took %v: it was retried, though no retry can mend it", d)
		}
	})
	t.Run("zookeeper", func(t *testing.T) {
		url := natsURL(t)
		r := start(t, bridge.Config{Servers: []string{"127.0.0.1:1"}, Watch: []string{"/x"}, ConnectTimeout: 500 * time.Millisecond,
			Sinks: []publish.Sink{jsSink(t, url)}})
		r.wait(t, 20*time.Second)
		if !isErr(r.err, bridge.ErrZooKeeperUnreachable) || !strings.Contains(r.err.Error(), "127.0.0.1:1") {
			t.Errorf("Run: %v; want ErrZooKeeperUnreachable naming the server", r.err)
		}
	})
}
