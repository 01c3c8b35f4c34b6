package bridge_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/browsertest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestLivePageShowsMarkupInPathsAsText: group paths may hold any
// character ZooKeeper takes but "/", markup and quotes included; the live
// page (served, and updated live by its script) and the timelines show
// them as text, never run them. A run script sets window.heraldXSS.
func TestLivePageShowsMarkupInPathsAsText(t *testing.T) {
	addrs := zkAddrs(t)
	root := groupPath(t)
	names := []string{`<img src=x onerror="window.heraldXSS=1">`, `"'><svg onload=window.heraldXSS=2>`, `ünïcødé 群 ✓ &amp; <b>bold`}
	s := session(t, addrs)
	var firsts []*elect.Handle
	for _, n := range names {
		firsts = append(firsts, leads(t, candidate(t, s, root+"/"+n, "owner<i>x")))
	}
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, HTTPAddr: "127.0.0.1:0", Source: "page-xss", Sinks: []publish.Sink{auditSink(t)}})
	waitStatus(t, r.Bridge, 15*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 && len(st.Groups) == len(names) })
	ctx := browsertest.New(t, 90*time.Second)
	base := "http://" + r.HTTPAddr() + "/"
	shown := func(page string) []string {
		var got []string
		if err := chromedp.Run(ctx, chromedp.Navigate(page), chromedp.WaitReady(`body`, chromedp.ByQuery),
			chromedp.Evaluate(`[...document.querySelectorAll("#groups tbody th a, g.line > text > title")].map(e => e.textContent)`, &got)); err != nil {
			t.Fatal(err)
		}
		return got
	}
	check := func(where string, got []string) {
		t.Helper()
		var xss any
		_ = chromedp.Run(ctx, chromedp.Evaluate(`window.heraldXSS`, &xss))
		if xss != nil {
			t.Fatalf("%s: a group path's markup ran (window.heraldXSS = %v)", where, xss)
		}
		want := map[string]bool{}
		for _, n := range names {
			want[root+"/"+n] = true
		}
		for _, g := range got {
			delete(want, g)
		}
		if len(want) != 0 {
			t.Errorf("%s: paths not shown as text: %v (shown: %q)", where, want, got)
		}
	}
	check("/", shown(base))
	// Live: a new owner of each reaches the page through its script.
	for i, n := range names {
		next := candidate(t, s, root+"/"+n, "second")
		queued(t, s, root+"/"+n, 2)
		if err := firsts[i].Resign(ctxT(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		leads(t, next)
	}
	var live []string
	waitFor(t, 10*time.Second, "the new owners on the page", func() bool {
		var owners []string
		_ = chromedp.Run(ctx, chromedp.Evaluate(`[...document.querySelectorAll("#groups tbody td[data-k=owner]")].map(e => e.textContent)`, &owners),
			chromedp.Evaluate(`[...document.querySelectorAll("#groups tbody th a")].map(e => e.textContent)`, &live))
		for _, o := range owners {
			if !strings.Contains(o, "second") {
				return false
			}
		}
		return len(owners) == len(names)
	})
	check("/ updated live", live)
	check("/timeline?q=", shown(base+"timeline?q="+url.QueryEscape(root)))
	check("/timeline?group=", append(shown(base+"timeline?group="+url.QueryEscape(root+"/"+names[0])), root+"/"+names[1], root+"/"+names[2]))
}
