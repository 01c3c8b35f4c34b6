package bridge_test

import (
	"context"
	"errors"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/jetstream"
)

// hb is the heartbeat of these tests: values stay fresh for
// publish.MinStaleAfter (1s) after one.
const hb = 100 * time.Millisecond

func ownerWatch(t *testing.T, url, group string) (*jetstream.OwnerWatch, njs.JetStream) {
	t.Helper()
	js := natsserver.JetStream(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var w *jetstream.OwnerWatch
	waitFor(t, 30*time.Second, "the owners bucket", func() bool {
		var err error
		w, err = jetstream.Follow(ctx, js, group)
		return err == nil
	})
	return w, js
}

// until returns the first update within d that cond accepts.
func until(t *testing.T, w *jetstream.OwnerWatch, d time.Duration, what string, cond func(jetstream.OwnerUpdate) bool) jetstream.OwnerUpdate {
	t.Helper()
	deadline := time.After(d)
	var seen []jetstream.OwnerUpdate
	for {
		select {
		case u, ok := <-w.Updates():
			if !ok {
				t.Fatalf("updates closed: %v", w.Err())
			}
			if cond(u) {
				return u
			}
			seen = append(seen, u)
		case <-deadline:
			t.Fatalf("no update within %v: %s; saw %+v", d, what, seen)
		}
	}
}

func confirmedOwner(source, node string) func(jetstream.OwnerUpdate) bool {
	return func(u jetstream.OwnerUpdate) bool {
		return u.Owner != nil && u.Owner.Owner.Node == node && !u.Stale && u.ConfirmedBy == source && u.BridgeState == publish.BridgeActive
	}
}

// noneStale fails if an update within d says stale.
func noneStale(t *testing.T, w *jetstream.OwnerWatch, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case u := <-w.Updates():
			if u.Stale {
				t.Fatalf("stale while the bridge runs: %+v", u)
			}
		case <-deadline:
			return
		}
	}
}

// An active bridge keeps its values fresh past the bound; stopped cleanly,
// it marks them stale at once.
func TestHeartbeatConfirmsThenStops(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	g := groupPath(t)
	a := leads(t, candidate(t, session(t, addrs), g, "a"))
	src := "hb-" + strings.ReplaceAll(g, "/", "_")
	r := start(t, bridge.Config{Servers: addrs, Watch: []string{g}, Source: src, Sinks: []publish.Sink{jsSink(t, url)}, Heartbeat: hb})
	w, _ := ownerWatch(t, url, g)
	until(t, w, 15*time.Second, "a, confirmed by "+src, confirmedOwner(src, a.Node()))
	noneStale(t, w, 3*publish.MinStaleAfter)

	began := time.Now()
	if err := r.stop(t); err != nil {
		t.Fatalf("clean stop: %v", err)
	}
	u := until(t, w, 5*time.Second, "stale, bridge stopped", func(u jetstream.OwnerUpdate) bool { return u.Stale })
	if !strings.Contains(u.StaleReason, "stopped") || u.Owner == nil || u.Confirmed.IsZero() {
		t.Fatalf("after a clean stop: %+v, want a, stale because %s stopped, with its last confirmation", u, src)
	}
	if d := time.Since(began); d >= publish.MinStaleAfter {
		t.Fatalf("stale %v after the stop: the stopped record did not say it at once", d)
	}
}

// A bridge that dies (Abort: no drain, no resign) writes nothing more: its
// values turn stale when the bound passes.
func TestHeartbeatAbortGoesStaleByTheBound(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	g := groupPath(t)
	a := leads(t, candidate(t, session(t, addrs), g, "a"))
	src := "hb-" + strings.ReplaceAll(g, "/", "_")
	r := start(t, bridge.Config{Servers: addrs, Watch: []string{g}, Source: src, Sinks: []publish.Sink{jsSink(t, url)}, Heartbeat: hb})
	w, js := ownerWatch(t, url, g)
	until(t, w, 15*time.Second, "a, confirmed by "+src, confirmedOwner(src, a.Node()))
	r.Abort()
	r.wait(t, 20*time.Second)
	u := until(t, w, 5*time.Second, "stale", func(u jetstream.OwnerUpdate) bool { return u.Stale })
	if !strings.Contains(u.StaleReason, "no heartbeat") {
		t.Fatalf("after Abort: %+v, want stale for want of heartbeats", u)
	}
	kv, err := js.KeyValue(ctxT(t, 5*time.Second), jetstream.DefaultBridgesBucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctxT(t, 5*time.Second), publish.BridgeKey(src))
	if err != nil {
		t.Fatal(err)
	}
	if h, err := publish.DecodeHeartbeat(e.Value()); err != nil || h.State != publish.BridgeActive {
		t.Fatalf("last heartbeat after Abort: %+v %v, want the last active one", h, err)
	}
}

// With HA, the bridge that takes over confirms the values of the groups it
// observes, even when what it held to re-state them was older than its
// replay window (it then re-states them afresh, TestHATakeoverPastTheReplayWindow;
// the values the other wrote are confirmed by its heartbeat meanwhile).
func TestHeartbeatHATakeoverConfirms(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	g, ha := groupPath(t), groupPath(t)
	a := leads(t, candidate(t, session(t, addrs), g, "a"))
	cfg := func(name string, replay time.Duration) bridge.Config {
		return bridge.Config{Servers: addrs, Watch: []string{g}, HAPath: ha, Source: name, Sinks: []publish.Sink{jsSink(t, url)},
			Heartbeat: hb, HAReplay: replay}
	}
	b1 := start(t, cfg("ha-1", 0))
	waitStatus(t, b1.Bridge, 15*time.Second, "ha-1 active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	w, _ := ownerWatch(t, url, g)
	until(t, w, 15*time.Second, "a, confirmed by ha-1", confirmedOwner("ha-1", a.Node()))
	b2 := start(t, cfg("ha-2", time.Millisecond))
	waitStatus(t, b2.Bridge, 15*time.Second, "ha-2 standby and ready", func(st bridge.Status) bool {
		return st.Role == bridge.RoleStandby && len(st.NotReady()) == 0
	})
	time.Sleep(50 * time.Millisecond) // past ha-2's replay window: it holds nothing to re-state
	if err := b1.stop(t); err != nil {
		t.Fatal(err)
	}
	until(t, w, 5*time.Second, "stale: ha-1 stopped", func(u jetstream.OwnerUpdate) bool { return u.Stale })
	u := until(t, w, 20*time.Second, "fresh again, confirmed by ha-2", func(u jetstream.OwnerUpdate) bool { return !u.Stale })
	if u.ConfirmedBy != "ha-2" || u.Owner == nil || u.Owner.Owner.Node != a.Node() {
		t.Fatalf("after the takeover: %+v, want a, confirmed by ha-2", u)
	}
}

// A group the bridge can no longer read is not confirmed: once its ACL
// refuses the bridge READ and its leader goes (ZooKeeper tells the bridge's
// watch nothing; the resync check finds it), the value the bucket holds
// (the gone leader) turns stale, saying the bridge cannot read the group
// since when, while the bridge's other groups stay fresh. Once the bridge
// reads the group again, the new state is published and fresh.
func TestUnreadableGroupGoesStale(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	admin := session(t, addrs)
	if err := admin.Conn().AddAuth("digest", []byte("admin:pw")); err != nil {
		t.Fatal(err)
	}
	locked, open := groupPath(t), groupPath(t)+"-open"
	if _, err := admin.Conn().Create(path.Dir(locked), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	for _, g := range []string{locked, open} {
		if _, err := admin.Conn().Create(g, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	doomed := session(t, addrs)
	a := leads(t, candidate(t, doomed, locked, "a"))
	o := leads(t, candidate(t, session(t, addrs), open, "o"))
	src := "hb-" + strings.ReplaceAll(locked, "/", "_")
	r := start(t, bridge.Config{Servers: addrs, Watch: []string{locked, open}, Source: src, Sinks: []publish.Sink{jsSink(t, url)},
		Heartbeat: hb, MaxRetryWait: 200 * time.Millisecond, Resync: 300 * time.Millisecond})
	w, _ := ownerWatch(t, url, locked)
	wo, _ := ownerWatch(t, url, open)
	until(t, w, 15*time.Second, "a, confirmed", confirmedOwner(src, a.Node()))
	until(t, wo, 15*time.Second, "o, confirmed", confirmedOwner(src, o.Node()))

	acl := append(zk.DigestACL(zk.PermAll, "admin", "pw"), zk.ACL{Perms: zk.PermCreate | zk.PermDelete, Scheme: "world", ID: "anyone"})
	if _, err := admin.Conn().SetACL(locked, acl, -1); err != nil {
		t.Fatal(err)
	}
	lockedOut := time.Now()
	if err := doomed.Close(); err != nil { // a's node goes with its session: the bridge's watch fires, its read is refused
		t.Fatal(err)
	}
	u := until(t, w, 10*time.Second, "a's value stale", func(u jetstream.OwnerUpdate) bool { return u.Stale })
	if u.Owner == nil || u.Owner.Owner.Node != a.Node() || !strings.Contains(u.StaleReason, src+" cannot read the group since ") ||
		u.Confirmed.Before(lockedOut.Add(-time.Second)) || u.Confirmed.After(time.Now()) {
		t.Fatalf("the unreadable group's value: %+v; want a, stale because %s cannot read the group, confirmed up to when it stopped reading", u, src)
	}
	noneStale(t, wo, 3*publish.MinStaleAfter) // the readable group is still confirmed
	if _, body := get(t, r.Handler(), "/"); !strings.Contains(body, ">unreadable<") || !strings.Contains(body, "may not list "+locked) ||
		!strings.Contains(body, "not the current one") {
		t.Errorf("the live page does not say the group is unreadable, why, and that its owner is only the last one seen:\n%s", body)
	}

	if _, err := admin.Conn().SetACL(locked, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	until(t, w, 10*time.Second, "no owner, confirmed", func(u jetstream.OwnerUpdate) bool {
		return u.Owner == nil && !u.Stale && u.ConfirmedBy == src
	})
}
