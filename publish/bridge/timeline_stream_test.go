package bridge_test

import (
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

// TestTimelinePageFollowsAChangeBeforeItsStreamOpened: a leader change
// that comes after a group's timeline was drawn, but before the page's
// script opened its event stream (a slow network, a busy browser), reaches
// the page. Before, the timeline's stream began at the bridge's "now" when
// it connected, not where the drawing was made: the page went on drawing
// the old leader as holding now, under "Updated live.", until some other
// change of the group.
func TestTimelinePageFollowsAChangeBeforeItsStreamOpened(t *testing.T) {
	addrs := zkAddrs(t)
	root := groupPath(t)
	jobs := root + "/jobs"
	s := session(t, addrs)
	alpha := leads(t, candidate(t, s, jobs, "alpha"))
	betaCh := candidate(t, s, jobs, "beta")
	queued(t, s, jobs, 2)
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, HTTPAddr: "127.0.0.1:0",
		Source: "timeline-stream", Sinks: []publish.Sink{auditSink(t)}})
	waitStatus(t, r.Bridge, 15*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 && len(st.Groups) == 1 })
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
	target, _ := url.Parse("http://" + r.HTTPAddr())
	proxy := httputil.NewSingleHostReverseProxy(target)
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
