package bridge_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestTimelinePageRetriesAFailedRefresh: a timeline page whose refresh
// fails (a proxy's 502, a dropped connection) while its stream stays up
// tries again. Before, the failure was dropped (a 502 silently, a network
// error with "reconnecting…" and no retry): the page went on drawing an
// owner that had resigned as holding now, not greyed, until the group's
// next change.
func TestTimelinePageRetriesAFailedRefresh(t *testing.T) {
	r, jobs, alpha, others := jobsTimeline(t, "timeline-retry", "alpha", "beta")
	betaCh := others[0]
	fp := failingTimelines(t, r.HTTPAddr())
	drawn, _ := browseTimeline(t, fp.front.URL, jobs)
	waitFor(t, 10*time.Second, "the page drawing alpha holding now", func() bool { return drawnHoldingNow(drawn(), alpha.Node()) })
	fp.failing.Store(true)
	if err := alpha.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	beta := leads(t, betaCh)
	waitFor(t, 20*time.Second, "the page's refresh failed", func() bool { return fp.failed.Load() > 0 })
	// Every refresh the change asked for has been sent (and failed) once
	// the stream has carried no row for a while (its batches and the
	// page's wait before a refresh are 300 ms).
	waitFor(t, 20*time.Second, "the stream quiet", func() bool {
		return time.Since(time.Unix(0, fp.groupAt.Load())) > 1500*time.Millisecond
	})
	fp.failing.Store(false)
	waitFor(t, 15*time.Second, "the page drawing beta holding now, its group unchanged since", func() bool { return drawnHoldingNow(drawn(), beta.Node()) })
}

// failingProxy is the browser's way to a bridge: while failing, it
// answers every timeline request with 502, as a proxy that lost the
// bridge does.
type failingProxy struct {
	front   *httptest.Server
	failing atomic.Bool
	failed  atomic.Int32
	groupAt atomic.Int64 // when the stream last carried a group's row (UnixNano)
}

func failingTimelines(t *testing.T, bridgeAddr string) *failingProxy {
	t.Helper()
	proxy := proxyTo(bridgeAddr)
	fp := &failingProxy{}
	fp.front = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/timeline" && fp.failing.Load() {
			fp.failed.Add(1)
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		if req.URL.Path == "/events" {
			w = rowsSeen{w, &fp.groupAt}
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(fp.front.Close)
	return fp
}

// rowsSeen notes when an event stream passing through it carries a
// group's row.
type rowsSeen struct {
	http.ResponseWriter
	at *atomic.Int64
}

func (rs rowsSeen) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("event: group")) {
		rs.at.Store(time.Now().UnixNano())
	}
	return rs.ResponseWriter.Write(b)
}

func (rs rowsSeen) Flush() { rs.ResponseWriter.(http.Flusher).Flush() }

func (rs rowsSeen) Unwrap() http.ResponseWriter { return rs.ResponseWriter }
