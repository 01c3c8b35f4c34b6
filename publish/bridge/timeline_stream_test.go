package bridge_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/browsertest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/audit"
)

// drawnHoldingNow reports whether a timeline's markup draws or lists
// node's tenure as holding now.
func drawnHoldingNow(markup, node string) bool {
	for _, part := range regexp.MustCompile(`<tr|<title`).Split(markup, -1) {
		if strings.Contains(part, node) && strings.Contains(part, "holding now") {
			return true
		}
	}
	return false
}

// auditSink is an audit log in the test's directory: a sink needing no
// server.
func auditSink(t *testing.T) publish.Sink {
	t.Helper()
	as, err := audit.New(filepath.Join(t.TempDir(), "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	return as
}

// jobsTimeline starts a bridge serving pages, named source, over a new
// root whose group jobs has ids[0] leading and the others queued behind
// it in order, and waits until it is ready. It returns the bridge, the
// group, its leader and the others' campaigns.
func jobsTimeline(t *testing.T, source string, ids ...string) (*running, string, *elect.Handle, []<-chan *elect.Handle) {
	t.Helper()
	addrs := zkAddrs(t)
	root := groupPath(t)
	jobs := root + "/jobs"
	s := session(t, addrs)
	leader := leads(t, candidate(t, s, jobs, ids[0]))
	var others []<-chan *elect.Handle
	for i, id := range ids[1:] {
		others = append(others, candidate(t, s, jobs, id))
		queued(t, s, jobs, i+2)
	}
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, HTTPAddr: "127.0.0.1:0",
		Source: source, Sinks: []publish.Sink{auditSink(t)}})
	waitStatus(t, r.Bridge, 15*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 && len(st.Groups) == 1 })
	return r, jobs, leader, others
}

// proxyTo is the plain way through to the bridge at addr that the tests'
// proxies put their faults in front of.
func proxyTo(addr string) *httputil.ReverseProxy {
	target, _ := url.Parse("http://" + addr)
	return httputil.NewSingleHostReverseProxy(target)
}

// browseTimeline opens group's timeline page at base in a browser, waits
// until the timeline is drawn, and returns a reader of its markup and
// the browser.
func browseTimeline(t *testing.T, base, group string) (func() string, context.Context) {
	t.Helper()
	ctx := browsertest.New(t, 90*time.Second)
	if err := chromedp.Run(ctx, chromedp.Navigate(base+"/timeline?group="+url.QueryEscape(group)), chromedp.WaitVisible("#timeline", chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	return func() string {
		var html string
		if err := chromedp.Run(ctx, chromedp.Evaluate(`document.getElementById("timeline").innerHTML`, &html)); err != nil {
			t.Fatal(err)
		}
		return html
	}, ctx
}

// TestTimelinePageFollowsAChangeBeforeItsStreamOpened: a leader change
// that comes after a group's timeline was drawn, but before the page's
// script opened its event stream (a slow network, a busy browser), reaches
// the page. Before, the timeline's stream began at the bridge's "now" when
// it connected, not where the drawing was made: the page went on drawing
// the old leader as holding now, under "Updated live.", until some other
// change of the group.
func TestTimelinePageFollowsAChangeBeforeItsStreamOpened(t *testing.T) {
	r, jobs, alpha, others := jobsTimeline(t, "timeline-stream", "alpha", "beta")
	betaCh := others[0]
	tlPath := "/timeline?group=" + url.QueryEscape(jobs)
	get := func() string {
		resp, err := http.Get("http://" + r.HTTPAddr() + tlPath)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	waitFor(t, 10*time.Second, "alpha drawn holding now", func() bool { return drawnHoldingNow(get(), alpha.Node()) })

	// The browser reaches the bridge through a proxy that holds the
	// page's script back until the leader has changed.
	proxy := proxyTo(r.HTTPAddr())
	scriptAsked, release := make(chan struct{}, 1), make(chan struct{})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/page.js" {
			scriptAsked <- struct{}{}
			<-release
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(front.Close)
	defer close(release) // before the proxy closes, on a failure

	ctx := browsertest.New(t, 90*time.Second)
	loaded := make(chan error, 1)
	go func() { loaded <- chromedp.Run(ctx, chromedp.Navigate(front.URL+tlPath)) }()
	select {
	case <-scriptAsked:
	case err := <-loaded:
		t.Fatalf("the page loaded without asking for its script: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the browser never asked for the page's script")
	}
	if err := alpha.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	beta := leads(t, betaCh)
	waitFor(t, 10*time.Second, "the bridge drawing beta holding now", func() bool { return drawnHoldingNow(get(), beta.Node()) })
	release <- struct{}{}
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	var drawn, caption string
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := chromedp.Run(ctx, chromedp.Evaluate(`document.getElementById("timeline").innerHTML`, &drawn),
			chromedp.Evaluate(`document.getElementById("live-state").textContent`, &caption)); err != nil {
			t.Fatal(err)
		}
		if drawnHoldingNow(drawn, beta.Node()) && !drawnHoldingNow(drawn, alpha.Node()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("5 s after its script ran, the page still draws alpha (resigned before) as holding now, beta not, saying %q:\n%s",
				caption, drawn)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not ordering
	}
	t.Logf("the page drew beta holding now; caption %q", caption)
}
