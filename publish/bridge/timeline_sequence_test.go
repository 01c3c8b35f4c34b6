package bridge_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestTimelinePageKeepsItsNewestRefresh: a timeline page's refresh whose
// answer comes late (a slow network, a busy bridge), after a later
// refresh's, does not replace the newer drawing. Before, the refreshes
// were not sequenced: the page went back to drawing an owner that had
// resigned since (beta, or nobody) as holding now, under "Updated live.",
// until the group's next change.
func TestTimelinePageKeepsItsNewestRefresh(t *testing.T) {
	r, jobs, alpha, others := jobsTimeline(t, "timeline-sequence", "alpha", "beta", "gamma")
	betaCh, gammaCh := others[0], others[1]
	lp := holdFirstRefresh(t, r.HTTPAddr())
	drawn, ctx := browseTimeline(t, lp.front.URL, jobs)
	waitFor(t, 10*time.Second, "the page drawing alpha holding now", func() bool { return drawnHoldingNow(drawn(), alpha.Node()) })
	if err := alpha.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lp.held:
	case <-time.After(20 * time.Second):
		t.Fatal("the page never refreshed its timeline after alpha resigned")
	}
	beta := leads(t, betaCh)
	if err := beta.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	gamma := leads(t, gammaCh)
	waitFor(t, 20*time.Second, "the page drawing gamma holding now", func() bool { return drawnHoldingNow(drawn(), gamma.Node()) })

	lp.letGo()
	<-lp.written
	// The browser has read the late answer once every refresh it sent
	// has its response (resource timing lists a fetch once its response
	// is in; the page's load is not among them); its script then takes a
	// moment to use it.
	waitFor(t, 10*time.Second, "the late answer read", func() bool {
		var done int
		_ = chromedp.Run(ctx, chromedp.Evaluate(`performance.getEntriesByType("resource").filter((e) => e.name.includes("/timeline?")).length`, &done))
		return done >= int(lp.timelines.Load())-1
	})
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if html := drawn(); !drawnHoldingNow(html, gamma.Node()) {
			t.Fatalf("a refresh answered late replaced the newer drawing: gamma not drawn holding now:\n%s", html)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not ordering
	}
}

// lateProxy is the browser's way to a bridge: it holds back the answer to
// a timeline page's first refresh (read from the bridge at once, so an
// older drawing) until letGo.
type lateProxy struct {
	front     *httptest.Server
	timelines atomic.Int32  // the /timeline requests so far, the page's load first
	held      chan struct{} // the first refresh's answer is read and held
	written   chan struct{} // and written, after letGo
	release   chan struct{}
	once      sync.Once
}

func holdFirstRefresh(t *testing.T, bridgeAddr string) *lateProxy {
	t.Helper()
	proxy := proxyTo(bridgeAddr)
	lp := &lateProxy{held: make(chan struct{}, 1), written: make(chan struct{}), release: make(chan struct{})}
	lp.front = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/timeline" || lp.timelines.Add(1) != 2 {
			proxy.ServeHTTP(w, req)
			return
		}
		rec := httptest.NewRecorder()
		proxy.ServeHTTP(rec, req)
		lp.held <- struct{}{}
		<-lp.release
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		close(lp.written)
	}))
	t.Cleanup(lp.front.Close)
	t.Cleanup(lp.letGo) // before the proxy closes (cleanups run last first), on a failure
	return lp
}

// letGo sends the held answer on.
func (lp *lateProxy) letGo() { lp.once.Do(func() { close(lp.release) }) }
