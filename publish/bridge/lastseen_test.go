package bridge_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/audit"
)

// An owner that went while the bridge's connection was down is not made
// to look as if it ended at its election: the snapshot after the
// reconnect names it with the last moment ZooKeeper vouched for it (the
// sending of the last request answered before the cut), and history ends
// its tenure there, marked as unseen.
func TestSnapshotAfterConnectionLossNamesTheOwnerLastSeen(t *testing.T) {
	addrs := zkAddrs(t)
	g := groupPath(t)
	a := leads(t, candidate(t, session(t, addrs), g, "a"))
	p := proxy(t, addrs[0])
	path := filepath.Join(t.TempDir(), "audit.log")
	as, err := audit.New(path)
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, bridge.Config{Servers: []string{p.Addr()}, SessionTimeout: 6 * time.Second, Watch: []string{g},
		Sinks: []publish.Sink{as}, Lossless: []string{"audit"}, Logger: testLogger(t)})
	waitStatus(t, r.Bridge, 20*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 })
	read := func() []publish.Event {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		evs, err := audit.ReadAll(ctx, path, func(e publish.Event) bool { return e.Group == g })
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	waitFor(t, 10*time.Second, "the first snapshot in the audit log", func() bool { return len(read()) > 0 })
	elected := read()[0].Time
	// The client pings every third of its 6s timeout: by now a ping
	// answered after the snapshot vouches for the owner.
	time.Sleep(3 * time.Second)
	cut := time.Now()
	p.Refuse(true)
	p.Cut()
	waitStatus(t, r.Bridge, 10*time.Second, "group unknown", func(st bridge.Status) bool { return st.Groups[g] == bridge.GroupUnknown })
	if err := a.Resign(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	b := leads(t, candidate(t, session(t, addrs), g, "b"))
	p.Refuse(false)

	var snap publish.Event
	waitFor(t, 15*time.Second, "the snapshot after the reconnect", func() bool {
		for _, e := range read() {
			if e.Snapshot && e.Owner != nil && e.Owner.Node == b.Node() {
				snap = e
				return true
			}
		}
		return false
	})
	l := snap.LastSeen
	if l == nil || l.Owner.Node != a.Node() || l.Term != a.Term() {
		t.Fatalf("snapshot after the reconnect: last_seen %+v; want the owner before the cut, %s (term %d)", l, a.Node(), a.Term())
	}
	if l.At.After(cut) || !l.At.After(elected.Add(time.Second)) {
		t.Errorf("last_seen at %v; want after the election (%v) and its next pings, and no later than the cut (%v)", l.At, elected, cut)
	}
	var found bool
	for _, tn := range audit.History(read()) {
		if tn.Owner.Node != a.Node() {
			continue
		}
		found = true
		if tn.UntilSeen || !tn.Until.Equal(l.At) || tn.HeldFor < time.Second {
			t.Errorf("history of the owner before the cut: until %v (seen %v), held for %v; want until ≥ %v, unseen", tn.Until, tn.UntilSeen, tn.HeldFor, l.At)
		}
	}
	if !found {
		t.Errorf("history has no tenure of %s", a.Node())
	}
}
