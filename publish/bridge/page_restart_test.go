package bridge_test

import (
	"errors"
	"fmt"
	"net"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/browsertest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// freeAddr is a local address nothing listens on now, for a bridge that
// must come back where the page looks for it.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// TestLivePageFollowsABridgeRestart: a page left open while its bridge
// restarts greys its rows while the stream is down, and then shows what
// changed meanwhile: the new owner, and a group that appeared. Before, the
// page resumed from its first number in the new bridge's log, which the
// new bridge had passed with its start-up snapshot: it kept the old owner
// and never showed the new group, while saying "Updated live."
func TestLivePageFollowsABridgeRestart(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	jobs, later := root+"/jobs", root+"/later"
	s := session(t, addrs)
	alpha := leads(t, candidate(t, s, jobs, "alpha"))
	betaCh := candidate(t, s, jobs, "beta")
	queued(t, s, jobs, 2)
	addr := freeAddr(t)
	cfg := bridge.Config{Servers: addrs, Discover: []string{root}, HTTPAddr: addr, Source: "page-restart", Sinks: []publish.Sink{jsSink(t, url)}}
	r := start(t, cfg)
	waitStatus(t, r.Bridge, 15*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 && len(st.Groups) == 1 })

	ctx := browsertest.New(t, 90*time.Second)
	eval := func(js string) string {
		var s string
		_ = chromedp.Run(ctx, chromedp.Evaluate(js, &s))
		return s
	}
	ownerOf := func(g string) string {
		return eval(fmt.Sprintf(`(document.querySelector('tr[data-group=%q] td[data-k=owner]')||{}).textContent||""`, g))
	}
	greyed := func() bool {
		return eval(`document.getElementById("groups").classList.contains("interrupted") ? "yes" : "no"`) == "yes"
	}
	if err := chromedp.Run(ctx, chromedp.Navigate("http://"+addr+"/"),
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-group=%q]`, jobs), chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "alpha on the page", func() bool { return strings.Contains(ownerOf(jobs), "alpha") })

	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the rows greyed while the bridge is down", greyed)
	if err := alpha.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	leads(t, betaCh)
	leads(t, candidate(t, s, later, "gamma"))

	cfg.Sinks = []publish.Sink{jsSink(t, url)} // the first bridge closed its own
	r2 := start(t, cfg)
	waitStatus(t, r2.Bridge, 15*time.Second, "ready again", func(st bridge.Status) bool { return len(st.NotReady()) == 0 && len(st.Groups) == 2 })
	waitFor(t, 20*time.Second, "the page showing beta and the new group", func() bool {
		return strings.Contains(ownerOf(jobs), "beta") && strings.Contains(ownerOf(later), "gamma")
	})
	waitFor(t, 5*time.Second, "the rows no longer greyed", func() bool { return !greyed() })
}

// TestLivePageFilterLetsMatchingGroupsIn: rows the filter hides never
// keep a matching group off the page, however many of them arrive.
func TestLivePageFilterLetsMatchingGroupsIn(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	s := session(t, addrs)
	leads(t, candidate(t, s, root+"/keep", "k0"))
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, HTTPAddr: "127.0.0.1:0", Source: "page-filter", Sinks: []publish.Sink{jsSink(t, url)}})
	waitStatus(t, r.Bridge, 15*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 && len(st.Groups) == 1 })
	ctx := browsertest.New(t, 90*time.Second)
	if err := chromedp.Run(ctx, chromedp.Navigate("http://"+r.HTTPAddr()+"/?q=keep"),
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-group=%q]`, root+"/keep"), chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	// More groups than the page's bound (500) arrive, none matching, then
	// one that matches.
	conn := s.Conn()
	for i := range 510 {
		g := fmt.Sprintf("%s/other-%03d", root, i)
		if _, err := conn.Create(g, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create(g+"/n_", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	waitStatus(t, r.Bridge, 60*time.Second, "every group observed", func(st bridge.Status) bool { return len(st.NotReady()) == 0 && len(st.Groups) == 511 })
	leads(t, candidate(t, s, root+"/keep2", "k2"))
	var rows, visible int
	waitFor(t, 15*time.Second, "keep2 shown beside keep", func() bool {
		_ = chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll("#groups tbody tr").length`, &rows),
			chromedp.Evaluate(`[...document.querySelectorAll("#groups tbody tr")].filter(r => !r.hidden).length`, &visible))
		return visible == 2
	})
	if rows > 500 {
		t.Fatalf("the page holds %d rows, over its bound of 500", rows)
	}
}

// TestLivePageOverItsBoundFollowsNewGroups: with more groups than the page
// lists (500), a new group that sorts among the listed ones shows up live,
// pushing out the last, and the caption's count follows. Before, such a
// group (and its owner) stayed off the page, and the caption said
// "Showing 500 of 501", until a reload.
func TestLivePageOverItsBoundFollowsNewGroups(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	s := session(t, addrs)
	conn := s.Conn()
	for _, p := range []string{path.Dir(root), root} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	for i := range 501 {
		g := fmt.Sprintf("%s/g-%03d", root, i)
		if _, err := conn.Create(g, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create(g+"/n_", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, HTTPAddr: "127.0.0.1:0", Source: "page-bound", Sinks: []publish.Sink{jsSink(t, url)}})
	waitStatus(t, r.Bridge, 60*time.Second, "every group observed", func(st bridge.Status) bool { return len(st.NotReady()) == 0 && len(st.Groups) == 501 })
	ctx := browsertest.New(t, 90*time.Second)
	first, last := root+"/a-new", fmt.Sprintf("%s/g-%03d", root, 499)
	if err := chromedp.Run(ctx, chromedp.Navigate("http://"+r.HTTPAddr()+"/"),
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-group=%q]`, last), chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	var caption, owner string
	var rows int
	var lastShown bool
	look := func() {
		_ = chromedp.Run(ctx, chromedp.Evaluate(`document.querySelector("#groups caption").textContent`, &caption),
			chromedp.Evaluate(fmt.Sprintf(`(document.querySelector('tr[data-group=%q] td[data-k=owner]')||{}).textContent||""`, first), &owner),
			chromedp.Evaluate(`document.querySelectorAll("#groups tbody tr").length`, &rows),
			chromedp.Evaluate(fmt.Sprintf(`!!document.querySelector('tr[data-group=%q]')`, last), &lastShown))
	}
	look()
	if !strings.Contains(caption, "Showing 500 of 501") {
		t.Fatalf("caption before: %q", caption)
	}
	leads(t, candidate(t, s, first, "newowner"))
	waitFor(t, 15*time.Second, "the new group, its owner and the count on the page", func() bool {
		look()
		return strings.Contains(owner, "newowner") && strings.Contains(caption, "Showing 500 of 502")
	})
	if rows != 500 || lastShown {
		t.Fatalf("the page holds %d rows (want 500), %s still shown: %v", rows, last, lastShown)
	}
	// A listed group that goes makes room: the next in order comes back.
	// Before, the page held 499 rows, and the group pushed out stayed off
	// it until a reload.
	leaving := fmt.Sprintf("%s/g-%03d", root, 10)
	ch, _, err := conn.Children(leaving)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ch {
		if err := conn.Delete(leaving+"/"+c, -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.Delete(leaving, -1); err != nil {
		t.Fatal(err)
	}
	var leftShown bool
	waitFor(t, 15*time.Second, "the group after the last listed one back on the page", func() bool {
		look()
		_ = chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(`!!document.querySelector('tr[data-group=%q]')`, leaving), &leftShown))
		return lastShown && !leftShown && rows == 500 && strings.Contains(caption, "Showing 500 of 501")
	})
}
