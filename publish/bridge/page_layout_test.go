package bridge_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/zkherald/herald/internal/browsertest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestLivePageFitsLongGroupPaths: a group whose path is long (deep
// nesting, long generated names) wraps in its cell: the table stays within
// the window, its state in view. Before, the path stood on one line and
// pushed the state and the other columns off the side of the page.
func TestLivePageFitsLongGroupPaths(t *testing.T) {
	addrs := zkAddrs(t)
	root := groupPath(t)
	var segs []string
	for i := range 6 {
		segs = append(segs, fmt.Sprintf("%d%s", i, strings.Repeat("abcdefgh", 8)))
	}
	g := root + "/" + strings.Join(segs, "/")
	s := session(t, addrs)
	leads(t, candidate(t, s, g, "owner-of-a-long-path"))
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root + "/" + strings.Join(segs[:5], "/")}, HTTPAddr: "127.0.0.1:0",
		Source: "page-long", Sinks: []publish.Sink{auditSink(t)}})
	waitStatus(t, r.Bridge, 15*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 && len(st.Groups) == 1 })
	ctx := browsertest.New(t, 90*time.Second)
	var stateRight, width, scrollWidth float64
	if err := chromedp.Run(ctx, chromedp.Navigate("http://"+r.HTTPAddr()+"/"),
		chromedp.WaitVisible(`#groups tbody tr`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('#groups tbody td[data-k=state]').getBoundingClientRect().right`, &stateRight),
		chromedp.Evaluate(`document.documentElement.clientWidth`, &width),
		chromedp.Evaluate(`document.documentElement.scrollWidth`, &scrollWidth)); err != nil {
		t.Fatal(err)
	}
	if stateRight > width || scrollWidth > width {
		t.Errorf("a %d-character path: the state cell ends at %.0f px, the page is %.0f px wide, in a window %.0f px wide",
			len(g), stateRight, scrollWidth, width)
	}
}
