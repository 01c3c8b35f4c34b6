package bridge_test

import (
	"errors"
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/browsertest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestOwnerlessFiguresNotClaimedWhileUnknown: while the bridge cannot
// reach ZooKeeper, it does not report a group it last saw without an
// owner as still without one: the group's series goes, and the aggregates
// count only groups it knows. Before, the figure went on growing through
// the cut, and the no-leader alert fired for an election that may well
// have had a leader all along (the unknown groups have their own alert).
func TestOwnerlessFiguresNotClaimedWhileUnknown(t *testing.T) {
	addrs := zkAddrs(t)
	s := session(t, addrs)
	empty := groupPath(t)
	for _, p := range []string{path.Dir(empty), empty} {
		if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	p := proxy(t, addrs[0])
	r := start(t, bridge.Config{Servers: []string{p.Addr()}, SessionTimeout: 20 * time.Second, Watch: []string{empty}, Sinks: []publish.Sink{auditSink(t)}})
	waitStatus(t, r.Bridge, 15*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 })
	series := `herald_group_ownerless_seconds{group="` + empty + `",recipe="election"}`
	figures := func() (secs float64, found bool, groups, longest float64) {
		secs, found = metricValue(t, r.Handler(), series)
		groups, _ = metricValue(t, r.Handler(), `herald_groups_ownerless{recipe="election"}`)
		longest, _ = metricValue(t, r.Handler(), `herald_groups_ownerless_longest_seconds{recipe="election"}`)
		return secs, found, groups, longest
	}
	waitFor(t, 10*time.Second, "the group counted without an owner", func() bool {
		secs, found, groups, longest := figures()
		return found && secs > 0 && groups == 1 && longest > 0
	})

	p.Blackhole(true)
	waitStatus(t, r.Bridge, 15*time.Second, "group unknown", func(st bridge.Status) bool { return st.Groups[empty] == bridge.GroupUnknown })
	if secs, found, groups, longest := figures(); found || groups != 0 || longest != 0 {
		t.Errorf("cut off from ZooKeeper, the bridge still reports the group without an owner: %s %v (present %v), groups %v, longest %v",
			series, secs, found, groups, longest)
	}
	p.Blackhole(false)
	waitStatus(t, r.Bridge, 15*time.Second, "ready again", func(st bridge.Status) bool { return len(st.NotReady()) == 0 })
	waitFor(t, 10*time.Second, "the group counted without an owner again", func() bool {
		secs, found, groups, _ := figures()
		return found && secs > 0 && groups == 1
	})
}

// TestLivePageCountsNoStretchWithoutOwnerWhileUnknown: on the live page,
// a group last seen without an owner, unknown now (ZooKeeper out of
// reach), shows no time without an owner: an owner may have come since.
// Before, its "Without owner for" went on counting up, second by second,
// through the cut, as if the bridge saw it.
func TestLivePageCountsNoStretchWithoutOwnerWhileUnknown(t *testing.T) {
	addrs := zkAddrs(t)
	s := session(t, addrs)
	empty := groupPath(t)
	for _, p := range []string{path.Dir(empty), empty} {
		if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	p := proxy(t, addrs[0])
	r := start(t, bridge.Config{Servers: []string{p.Addr()}, SessionTimeout: 20 * time.Second, Watch: []string{empty},
		HTTPAddr: "127.0.0.1:0", Sinks: []publish.Sink{auditSink(t)}})
	waitStatus(t, r.Bridge, 15*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 })
	ctx := browsertest.New(t, 90*time.Second)
	sel := fmt.Sprintf(`tr[data-group=%q]`, empty)
	if err := chromedp.Run(ctx, chromedp.Navigate("http://"+r.HTTPAddr()+"/"), chromedp.WaitVisible(sel, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	var state, ownerless string
	look := func() {
		_ = chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(`document.querySelector('%s').dataset.state`, sel), &state),
			chromedp.Evaluate(fmt.Sprintf(`document.querySelector('%s td[data-k=ownerless]').textContent.trim()`, sel), &ownerless))
	}
	waitFor(t, 10*time.Second, "the time without an owner on the page", func() bool { look(); return ownerless != "" })

	p.Blackhole(true)
	waitFor(t, 15*time.Second, "the row unknown", func() bool { look(); return state == "unknown" })
	time.Sleep(2 * time.Second) // the page's ticker has run since
	if look(); ownerless != "" {
		t.Errorf("unknown, the row still counts a time without an owner: %q", ownerless)
	}
	p.Blackhole(false)
	waitFor(t, 20*time.Second, "the row read again, counting", func() bool { look(); return state == "no owner" && ownerless != "" })
}
