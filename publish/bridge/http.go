package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ReadyzGroupsLimit is how many groups /readyz lists by path; beyond it,
// only their counts by state.
const ReadyzGroupsLimit = 1000

// Handler serves the live page (/: every observed group, kept current
// through /events; /timeline?group= its recent tenures), /metrics
// (Prometheus), /healthz (200 while the process runs) and /readyz (200
// when ready, else 503; both with the Status as JSON and, when not ready,
// the reasons).
func (b *Bridge) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(b.reg, promhttp.HandlerOpts{Registry: b.reg}))
	mux.HandleFunc("/", b.servePage)
	mux.HandleFunc("/page.js", b.serveJS)
	mux.HandleFunc("/events", b.serveEvents)
	mux.HandleFunc("/timeline", b.serveTimeline)
	mux.HandleFunc("/timeline.svg", b.serveTimeline)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", b.serveReadyz)
	return mux
}

// serveReadyz is /readyz: 200 when ready, else 503 with the reasons,
// both with the Status as JSON. Right after the process stalled (SIGSTOP,
// a paused VM) the Status is the one from before: the session still reads
// connected and every group live, though ZooKeeper may have expired the
// session, and owners changed, meanwhile. It first waits (briefly, as the
// live page does) to catch up; failing that, it is not ready.
func (b *Bridge) serveReadyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), stallCatchUp)
	caughtUp := b.caughtUpAfterStall(ctx)
	cancel()
	st := b.Status() // read after the catch-up: what it heard meanwhile counts
	why := st.NotReady()
	if !caughtUp {
		why = append(why, stalledNotReady)
	}
	body := struct {
		Ready    bool     `json:"ready"`
		NotReady []string `json:"not_ready,omitempty"`
		Status
		// GroupCount and GroupStates count the groups; beyond
		// ReadyzGroupsLimit they stand in for the list (a probe every
		// few seconds should not carry 100,000 paths).
		GroupCount  int                `json:"group_count"`
		GroupStates map[GroupState]int `json:"group_states"`
	}{Ready: len(why) == 0, NotReady: why, Status: st, GroupCount: len(st.Groups), GroupStates: map[GroupState]int{}}
	for _, gs := range st.Groups {
		body.GroupStates[gs]++
	}
	if len(st.Groups) > ReadyzGroupsLimit {
		body.Groups = nil
	}
	w.Header().Set("Content-Type", "application/json")
	if len(why) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(body)
}

// stalledNotReady is /readyz's reason while the bridge has not caught up
// after its process stalled.
const stalledNotReady = "the process has just run again after it stalled (SIGSTOP, a paused VM) and has not read from ZooKeeper what changed meanwhile"

// serveHTTP listens on Config.HTTPAddr, if set, and returns a function that
// stops the server.
func (b *Bridge) serveHTTP() (func(), error) {
	if b.cfg.HTTPAddr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", b.cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("bridge: listen for HTTP on %s: %w (is the address right and free?)", b.cfg.HTTPAddr, err)
	}
	b.mu.Lock()
	b.httpAddr = ln.Addr().String()
	b.mu.Unlock()
	// The live page's event streams last as long as their browsers: they
	// end with the server.
	base, endStreams := context.WithCancel(context.Background())
	srv := &http.Server{Handler: b.Handler(), ReadHeaderTimeout: 5 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	b.log.Info("serving HTTP", "addr", ln.Addr().String(), "paths", "/ (live page) /metrics /healthz /readyz")
	return func() {
		endStreams()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			// A stream blocked writing to a reader that stopped reading
			// (a frozen browser, a peer gone with no reset) sees no
			// cancel: its connection is closed under it, or it outlives
			// the bridge.
			_ = srv.Close()
		}
		<-done
	}, nil
}
