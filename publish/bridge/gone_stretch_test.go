package bridge_test

import (
	"errors"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/jetstream"
)

// A group found gone after a stretch the bridge did not see has its
// owner's end published in a form the owners stores take: a snapshot of no
// owner dated by the parent's last child change, marked as a gap. Before,
// it went out at zxid 0, which the bucket and the topic took for older
// than the owner; they kept naming the gone owner, which the bridge's
// heartbeats then confirmed, fresh, for ever.

// goneDuringCut cuts the bridge's connection (its session lives on), has
// the owner's session end and gone remove the group (or the leader's
// parent), heals the connection, and returns when the owners bucket names
// no owner. It fails if the bucket still names one, fresh, by then.
func goneDuringCut(t *testing.T, px *faultproxy.Proxy, url, group string, doomed *elect.Session, gone func(admin *elect.Session)) {
	t.Helper()
	w, _ := ownerWatch(t, url, group)
	until(t, w, 15*time.Second, "an owner, confirmed", func(u jetstream.OwnerUpdate) bool { return u.Owner != nil && !u.Stale })
	px.Refuse(true)
	px.Cut()
	if err := doomed.Close(); err != nil {
		t.Fatal(err)
	}
	gone(session(t, zkAddrs(t)))
	px.Refuse(false)
	until(t, w, 15*time.Second, "no owner in the bucket", func(u jetstream.OwnerUpdate) bool { return u.Owner == nil })
}

// cutBridge starts a bridge with cfg through a proxy to cut its
// connection with, and a session timeout that outlives the cut.
func cutBridge(t *testing.T, cfg bridge.Config) *faultproxy.Proxy {
	t.Helper()
	px := proxy(t, zkAddrs(t)[0])
	cfg.Servers, cfg.Heartbeat, cfg.MaxRetryWait, cfg.SessionTimeout = []string{px.Addr()}, hb, 200*time.Millisecond, 8*time.Second
	start(t, cfg)
	return px
}

// TestGroupGoneDuringDisconnectIsEnded: a discovered group deleted, with
// its owner, while the bridge's connection was cut: once reconnected the
// bridge publishes the owner's end, dated and marked as a gap, and neither
// the owners bucket nor the owners topic names the gone owner.
func TestGroupGoneDuringDisconnectIsEnded(t *testing.T) {
	url := natsURL(t)
	kc := kafkatest.Start(t)
	kcfg, ksink := kafkaStore(t, kc)
	root := groupPath(t)
	g := root + "/g"
	doomed := session(t, zkAddrs(t))
	leads(t, candidate(t, doomed, g, "a"))
	events := collect(t, url, "herald.*."+publish.MustTokens(g))
	px := cutBridge(t, bridge.Config{Discover: []string{root}, Source: "gone-dc", Sinks: []publish.Sink{jsSink(t, url), ksink}})
	waitFor(t, 20*time.Second, "a in the owners topic", func() bool { return kafkaOwner(t, kcfg, g) == "a" })
	goneDuringCut(t, px, url, g, doomed, func(admin *elect.Session) { deleteTree(t, admin, g) })
	events.waitCount(t, 5*time.Second, "the owner's end, dated, marked as a gap", 1, func(e publish.Event) bool {
		return e.Type == publish.LeaderLost && e.Snapshot && e.Gap && e.Zxid != 0
	})
	waitFor(t, 15*time.Second, "no owner in the owners topic", func() bool { return kafkaOwner(t, kcfg, g) == "" })
}

// TestWatchedGroupGoneDuringDisconnectIsEnded: the same for a --watch
// group, which the bridge goes on observing (and its heartbeats
// confirming) after it is gone.
func TestWatchedGroupGoneDuringDisconnectIsEnded(t *testing.T) {
	url := natsURL(t)
	g := groupPath(t) + "/g"
	doomed := session(t, zkAddrs(t))
	leads(t, candidate(t, doomed, g, "a"))
	px := cutBridge(t, bridge.Config{Watch: []string{g}, Source: "gone-dw", Sinks: []publish.Sink{jsSink(t, url)}})
	goneDuringCut(t, px, url, g, doomed, func(admin *elect.Session) { deleteTree(t, admin, g) })
}

// TestLeaderParentGoneDuringDisconnectIsEnded: a single-node leader
// (--leader) whose node and parent were deleted while the connection was
// cut (a Hadoop nameservice removed): dated by the nearest ancestor left.
func TestLeaderParentGoneDuringDisconnectIsEnded(t *testing.T) {
	url := natsURL(t)
	root := groupPath(t)
	parent := root + "/ns1"
	leader := parent + "/ActiveStandbyElectorLock"
	admin := session(t, zkAddrs(t))
	for _, p := range []string{path.Dir(root), root, parent} {
		if _, err := admin.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	doomed := session(t, zkAddrs(t))
	if _, err := doomed.Conn().Create(leader, []byte("nn1"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	px := cutBridge(t, bridge.Config{Leaders: map[string]elect.SingleNode{leader: {}}, Source: "gone-dl", Sinks: []publish.Sink{jsSink(t, url)}})
	goneDuringCut(t, px, url, leader, doomed, func(admin *elect.Session) { deleteTree(t, admin, parent) })
}

// TestUnreadableGroupGoneIsEnded: a discovered group the bridge may no
// longer READ (an ACL) goes stale, as it should; then its owner goes and
// the group is deleted. The bridge drops the group from its root, and its
// owner's end is published first, dated: the value does not turn fresh
// again with the gone owner in it.
func TestUnreadableGroupGoneIsEnded(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	admin := session(t, addrs)
	if err := admin.Conn().AddAuth("digest", []byte("admin:pw")); err != nil {
		t.Fatal(err)
	}
	root := groupPath(t)
	g := root + "/g"
	for _, p := range []string{path.Dir(root), root, g} {
		if _, err := admin.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	doomed := session(t, addrs)
	a := leads(t, candidate(t, doomed, g, "a"))
	start(t, bridge.Config{Servers: addrs, Discover: []string{root}, Source: "gone-acl", Sinks: []publish.Sink{jsSink(t, url)},
		Heartbeat: hb, MaxRetryWait: 200 * time.Millisecond, Resync: 300 * time.Millisecond})
	w, _ := ownerWatch(t, url, g)
	until(t, w, 15*time.Second, "a, confirmed", confirmedOwner("gone-acl", a.Node()))
	acl := append(zk.DigestACL(zk.PermAll, "admin", "pw"), zk.ACL{Perms: zk.PermCreate | zk.PermDelete, Scheme: "world", ID: "anyone"})
	if _, err := admin.Conn().SetACL(g, acl, -1); err != nil {
		t.Fatal(err)
	}
	if err := doomed.Close(); err != nil {
		t.Fatal(err)
	}
	until(t, w, 10*time.Second, "a's value stale", func(u jetstream.OwnerUpdate) bool { return u.Stale })
	if err := admin.Conn().Delete(g, -1); err != nil {
		t.Fatal(err)
	}
	u := until(t, w, 20*time.Second, "the value confirmed again", func(u jetstream.OwnerUpdate) bool { return !u.Stale })
	if u.Owner != nil {
		t.Fatalf("the group is gone, yet the owners bucket names %s, fresh (confirmed by %s)", u.Owner.Owner.Node, u.ConfirmedBy)
	}
}

// TestGroupGoneDuringLostSessionIsEnded: a discovered group deleted, with
// its owner, while the bridge's session was lost: the new session's root
// listing does not have it, and the bridge, which last published an owner
// of it, observes it to publish that owner's end, dated, as a gap.
func TestGroupGoneDuringLostSessionIsEnded(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	g := root + "/g"
	doomed := session(t, addrs)
	leads(t, candidate(t, doomed, g, "a"))
	keep := root + "/keep"
	leads(t, candidate(t, session(t, addrs), keep, "k"))
	events := collect(t, url, "herald.*."+publish.MustTokens(g))
	px := proxy(t, addrs[0])
	r := start(t, bridge.Config{Servers: []string{px.Addr()}, Discover: []string{root}, Source: "gone-ls", Sinks: []publish.Sink{jsSink(t, url)},
		Heartbeat: hb, MaxRetryWait: 200 * time.Millisecond, SessionTimeout: time.Second})
	w, _ := ownerWatch(t, url, g)
	until(t, w, 15*time.Second, "an owner, confirmed", func(u jetstream.OwnerUpdate) bool { return u.Owner != nil && !u.Stale })
	px.Blackhole(true)
	waitStatus(t, r.Bridge, 10*time.Second, "session lost", func(st bridge.Status) bool { return st.Session == "lost" })
	if err := doomed.Close(); err != nil {
		t.Fatal(err)
	}
	deleteTree(t, session(t, addrs), g)
	px.Blackhole(false)
	waitStatus(t, r.Bridge, 15*time.Second, "a new session", func(st bridge.Status) bool { return st.Sessions == 2 })
	until(t, w, 15*time.Second, "no owner in the bucket", func(u jetstream.OwnerUpdate) bool { return u.Owner == nil })
	events.waitCount(t, 5*time.Second, "the owner's end, dated, marked as a gap", 1, func(e publish.Event) bool {
		return e.Type == publish.LeaderLost && e.Snapshot && e.Gap && e.Zxid != 0
	})
}

// TestGoneGroupEndedOnce: a group whose end the bridge published (found
// gone at start-up) is not published again, as a gap, at every new
// ZooKeeper session: its end is the last word of it now.
func TestGoneGroupEndedOnce(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	g := root + "/g"
	s := session(t, addrs)
	leads(t, candidate(t, s, g, "a"))
	leads(t, candidate(t, s, root+"/keep", "k"))
	js := jsSink(t, url)
	first := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, Source: "once", Sinks: []publish.Sink{js}})
	w, _ := ownerWatch(t, url, g)
	until(t, w, 15*time.Second, "an owner", func(u jetstream.OwnerUpdate) bool { return u.Owner != nil })
	if err := first.stop(t); err != nil {
		t.Fatal(err)
	}
	admin := session(t, addrs)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	deleteTree(t, admin, g)
	leads(t, candidate(t, admin, root+"/keep", "k2"))

	events := collect(t, url, "herald.*."+publish.MustTokens(g))
	ends := func(e publish.Event) bool { return e.Type == publish.LeaderLost && e.Gap }
	px := proxy(t, addrs[0])
	r := start(t, bridge.Config{Servers: []string{px.Addr()}, Discover: []string{root}, Source: "once", Sinks: []publish.Sink{jsSink(t, url)},
		MaxRetryWait: 200 * time.Millisecond, SessionTimeout: time.Second})
	events.waitCount(t, 15*time.Second, "the gone group's end", 1, ends)
	for n := 2; n <= 3; n++ {
		px.Blackhole(true)
		waitStatus(t, r.Bridge, 10*time.Second, "session lost", func(st bridge.Status) bool { return st.Session == "lost" })
		px.Blackhole(false)
		waitStatus(t, r.Bridge, 15*time.Second, "a new session, ready", func(st bridge.Status) bool {
			return st.Sessions == n && len(st.NotReady()) == 0
		})
	}
	time.Sleep(time.Second)
	if n := events.count(ends); n != 1 {
		t.Fatalf("the gone group's end was published %d times over three sessions; want once: %+v", n, events.all())
	}
}
