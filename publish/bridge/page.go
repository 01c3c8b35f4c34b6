package bridge

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/timeline"
	"github.com/zkherald/herald/publish"
)

// The live page's files, embedded: a fresh machine needs nothing beyond
// the binary, and the page works with no script at all (the script only
// keeps it current).
var (
	//go:embed page.html
	pageHTML string
	//go:embed page.js
	pageJS []byte

	pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
		"since": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format("2006-01-02 15:04:05")
		},
		"dur": shortDuration,
		// class makes a state a CSS class name ("no owner": "no-owner").
		"class": func(s string) string { return strings.ReplaceAll(s, " ", "-") },
		// keepAlive is the event stream's keep-alive, in ms, for the
		// page's watchdog.
		"keepAlive": func() int64 { return keepAlive.Milliseconds() },
	}).Parse(pageHTML))
)

// pageLimit is how many groups the page lists at once; a filter narrows a
// bigger set.
const pageLimit = 500

// headline is the top of the page: the bridge itself, all of Status but
// the groups (copying 100,000 of them every second for a page's header
// would be waste).
type headline struct {
	Source    string                `json:"source"`
	Role      Role                  `json:"role"`
	Shard     string                `json:"shard,omitempty"`
	Session   string                `json:"session"`
	SessionID string                `json:"session_id,omitempty"`
	Sessions  int                   `json:"sessions"`
	Groups    int                   `json:"groups"`
	Published int64                 `json:"published"`
	Sinks     map[string]SinkStatus `json:"sinks"`
	SinkNames []string              `json:"-"`
	// ListErrors is Status.ListErrors: a root (or level) that cannot be
	// listed holds every heartbeat back, and the page read healthy.
	ListErrors map[string]string `json:"list_errors,omitempty"`
	ListNames  []string          `json:"-"`
}

func (b *Bridge) headline() headline {
	st, s := b.sessionState()
	stats := b.pipe.Stats()
	b.mu.Lock()
	h := headline{Source: b.cfg.Source, Role: b.role, Shard: b.cfg.Shard.String(), Session: st.String(), Sessions: b.sessions,
		Groups: len(b.groups), Published: stats.Published, Sinks: map[string]SinkStatus{}}
	for n, ss := range stats.Sinks {
		h.Sinks[n] = sinkStatus(ss, b.sinkUp[n])
		h.SinkNames = append(h.SinkNames, n)
	}
	for r, e := range b.rootErrs {
		if h.ListErrors == nil {
			h.ListErrors = map[string]string{}
		}
		h.ListErrors[r] = e
		h.ListNames = append(h.ListNames, r)
	}
	b.mu.Unlock()
	sort.Strings(h.SinkNames)
	sort.Strings(h.ListNames)
	if s != nil {
		h.SessionID = fmt.Sprintf("0x%x", uint64(s.ID()))
	}
	return h
}

// rowOf is one group's row; ok is false when the group is not observed.
func (b *Bridge) rowOf(group string, now time.Time) (row, bool) {
	b.mu.Lock()
	st, ok := b.groups[group]
	b.mu.Unlock()
	if !ok {
		return row{Group: group, Gone: true}, false
	}
	r := row{Group: group}
	persistent := false
	b.truth.mu.Lock()
	g := b.truth.groups[group]
	if g != nil {
		r.Recipe, r.Owner, r.Node, r.Term = string(g.recipe), g.ownerID, g.owner, g.term
		persistent = g.persistent
		r.Since, r.SinceSeen = g.sinceTime(), g.sinceSeen
		for _, t := range g.recent {
			if now.Sub(t) <= time.Hour {
				r.Changes++
			}
		}
		if g.owner == "" && !g.ownerless.IsZero() {
			r.Ownerless, r.OwnerlessSeen = now.Sub(g.ownerless), g.ownerlessSeen
		}
	}
	b.truth.mu.Unlock()
	readErr := b.readErr(group)
	switch {
	case st == GroupPending && readErr != "":
		r.State, r.Why = "unreadable", readErr+" (retrying)"
	case st == GroupUnknown && readErr != "" && r.Node != "":
		r.State, r.Why = "unreadable", readErr+" (retrying): the owner shown is the last one seen, not the current one"
	case st == GroupUnknown && readErr != "":
		r.State, r.Why = "unreadable", readErr+" (retrying)"
	case st == GroupPending:
		r.State, r.Why = "pending", "not read yet"
	case st == GroupUnknown && r.Node != "":
		r.State, r.Why = "stale", "ZooKeeper not reachable: the owner shown is the last one seen, not the current one"
	case st == GroupUnknown:
		r.State, r.Why = "unknown", "ZooKeeper not reachable"
	case g != nil && g.hazard != "":
		r.State, r.Why = "unsafe", "two owners possible: "+g.hazard
	case g != nil && len(g.suspects) > 0 && r.Node == "":
		// With no owner, a queue that holds a suspect waits behind it
		// (elect.View.Blocked): only its deletion lets the next one own.
		r.State, r.Why = "suspect", fmt.Sprintf("no owner: the queue waits behind %d node(s) that cannot be what the queue says; delete a leftover (herald who names it)", len(g.suspects))
	case g != nil && len(g.suspects) > 0:
		r.State, r.Why = "suspect", fmt.Sprintf("%d queue node(s) that cannot be what the queue says", len(g.suspects))
	case r.Node == "":
		r.State = "no owner"
	case g != nil && g.ready:
		r.State = "ready"
	default:
		r.State = "held"
	}
	if r.Node == "" {
		r.Since = time.Time{}
	}
	if unconfirmedState(r.State) {
		// Without an owner only as last seen: one may have come since. A
		// stretch counting up on the page would say the bridge sees it.
		r.Ownerless, r.OwnerlessSeen = 0, false
	}
	if _, leader := b.leaderNode(group); leader && persistent && (r.State == "held" || r.State == "ready") {
		// Only a KRaft controller's /controller is taken for a leader
		// while no session holds it: it may name a past controller.
		r.Why = elect.KRaftNote
	}
	return r, true
}

// rows lists the observed groups whose path contains q, sorted, at most
// pageLimit of them, and how many matched.
func (b *Bridge) rows(q string, now time.Time) ([]row, int) {
	names, matched := b.pageGroups(q)
	out := make([]row, 0, len(names))
	for _, g := range names {
		if r, ok := b.rowOf(g, now); ok {
			out = append(out, r)
		}
	}
	return out, matched
}

// pageGroups names the groups rows lists, and how many matched.
func (b *Bridge) pageGroups(q string) ([]string, int) {
	b.mu.Lock()
	names := make([]string, 0, len(b.groups))
	for g := range b.groups {
		if strings.Contains(g, q) {
			names = append(names, g)
		}
	}
	b.mu.Unlock()
	sort.Strings(names)
	matched := len(names)
	if len(names) > pageLimit {
		names = names[:pageLimit]
	}
	return names, matched
}

// matched is how many observed groups' paths contain q.
func (b *Bridge) matched(q string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q == "" {
		return len(b.groups)
	}
	n := 0
	for g := range b.groups {
		if strings.Contains(g, q) {
			n++
		}
	}
	return n
}

// servePage is "/": the bridge, then every observed group.
func (b *Bridge) servePage(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query().Get("q")
	behind := !b.caughtUpAfterStall(r.Context())
	// The page's stream starts from before the rows are read: a change
	// meanwhile is sent again rather than missed.
	seq := b.live.current()
	now := time.Now()
	rows, matched := b.rows(q, now)
	if behind {
		for i := range rows {
			switch {
			case unconfirmedState(rows[i].State):
				// Already not shown as current, saying why.
			default:
				rows[i].State, rows[i].Why = "stale", "the bridge has just run again after its process stalled and has not read what changed meanwhile: the owner shown may be gone"
				// As for any unconfirmed row (rowOf): an owner may
				// have come meanwhile, so no stretch without one.
				rows[i].Ownerless, rows[i].OwnerlessSeen = 0, false
			}
		}
	}
	data := struct {
		H         headline
		Rows      []row
		Matched   int
		Limit     int
		Query     string
		Cursor    string
		LiveState string
	}{b.headline(), rows, matched, pageLimit, q, b.live.cursor(seq), liveState(rows)}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := pageTmpl.ExecuteTemplate(w, "page", data); err != nil {
		b.log.Warn("live page", "err", err)
	}
}

// liveState is the caption's word on the rows while the page's stream is
// live: that it is, and how many rows show an owner not confirmed now.
// A live stream of rows that all read stale said "Updated live." alone.
// page.js says the same as rows change.
func liveState(rows []row) string {
	n := 0
	for _, r := range rows {
		if unconfirmedState(r.State) {
			n++
		}
	}
	switch n {
	case 0:
		return "Updated live."
	case 1:
		return "Updated live, but 1 group is not confirmed now (see its state)."
	}
	return fmt.Sprintf("Updated live, but %d groups are not confirmed now (see their state).", n)
}

// unconfirmedState reports whether a row in state st shows nothing
// confirmed now (page.js keeps the same list).
func unconfirmedState(st string) bool {
	switch st {
	case "stale", "unknown", "unreadable", "pending":
		return true
	}
	return false
}

// caughtUpAfterStall reports whether what the bridge shows is as current
// as its session: after the process stalled (SIGSTOP, a paused VM), the
// watch events that came meanwhile wait to be read, and a page served
// before then would show owners long gone as holding. It then waits
// (briefly, or until ctx ends) until ZooKeeper answers a request sent
// now, which comes after every such event, and the observers have
// published what it heard. The pages and streams asking meanwhile share
// one try and its answer: each took its own turn of up to stallCatchUp,
// so that a page load behind six open pages' streams waited 11 s.
func (b *Bridge) caughtUpAfterStall(ctx context.Context) bool {
	b.stallMu.Lock()
	if !elect.Stalled(b.caughtUp) {
		b.stallMu.Unlock()
		return true
	}
	c := b.catching
	if c == nil {
		c = &catchUp{done: make(chan struct{})}
		b.catching = c
		go b.tryCatchUp(c)
	}
	b.stallMu.Unlock()
	select {
	case <-c.done:
		return c.ok
	case <-ctx.Done():
		return false
	}
}

// catchUp is one try at catching up after a stall; ok is set before done
// is closed.
type catchUp struct {
	done chan struct{}
	ok   bool
}

func (b *Bridge) tryCatchUp(c *catchUp) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*stallCatchUp)
	defer cancel()
	c.ok = b.zkAnswers(stallCatchUp) && b.observersCaughtUp(ctx, stallCatchUp)
	b.stallMu.Lock()
	if c.ok {
		b.caughtUp = start
	}
	b.catching = nil
	b.stallMu.Unlock()
	close(c.done)
}

// stallCatchUp bounds the page's wait after a stall.
const stallCatchUp = 2 * time.Second

func (b *Bridge) serveJS(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	_, _ = w.Write(pageJS)
}

// keepAlive is how often the event stream says it is alive when nothing
// changed: a page that hears nothing for a few of these (the bridge's
// process hung, packets dropped with no reset, so the connection still
// looks open) greys itself as it does when the stream breaks.
const keepAlive = 2 * time.Second

// serveEvents is the page's server-sent event stream: "group" with the
// row of a group matching the page's filter (?q=, a part of its path)
// whenever it may have changed (coalesced, at most every
// 100 ms), "status" with the headline when it changed, "reload" when the
// stream fell behind or the reader's place is another process's (the
// bridge restarted), "count" with how many groups match the page's filter
// (?q=) when that changed, and "ping" after keepAlive with nothing else
// sent.
// Each batch ends with a "cursor" event whose id is the reader's place, so
// that a browser reconnecting on its own (sending it back as
// Last-Event-ID) resumes there, not where the page started.
func (b *Bridge) serveEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	seq, reloadFirst := b.live.current(), false
	from := r.Header.Get("Last-Event-ID")
	if from == "" {
		from = r.URL.Query().Get("since")
	}
	if from != "" {
		var ok bool
		if seq, ok = b.live.parseCursor(from); !ok {
			seq, reloadFirst = b.live.current(), true
		}
	}
	sw := &streamWriter{w: w, rc: http.NewResponseController(w), b: b, q: r.URL.Query().Get("q"), lastMatched: -1}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		// Right after the process stalled, what it shows may be long
		// gone: it says nothing (the page greys itself) until caught up.
		if !b.caughtUpAfterStall(r.Context()) {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
				continue
			}
		}
		groups, next, reload, wake := b.live.since(seq)
		seq = next
		if reloadFirst {
			reload, reloadFirst = true, false
		}
		if !sw.batch(groups, reload, seq) || !sw.flush(fl) {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-wake:
			// Let a burst of changes gather into one write.
			select {
			case <-time.After(100 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		case <-tick.C:
		}
	}
}

// streamWriter writes one reader's event stream, remembering what it last
// sent.
type streamWriter struct {
	w           http.ResponseWriter
	rc          *http.ResponseController
	b           *Bridge
	q           string // the page's filter
	lastHead    []byte
	lastMatched int
	lastCursor  string
	lastWrite   time.Time
}

// streamStall is how long a write to a page's stream may wait on its
// reader: one that takes nothing for so long (a frozen browser, a peer
// gone with no reset) is dropped, where its stream stayed blocked, and
// its connection held, for as long as the bridge ran. A browser that
// comes back reconnects by itself and resumes where it stopped.
const streamStall = 20 * time.Second

// flush sends what the batch wrote; false when the reader is gone or
// stuck.
func (sw *streamWriter) flush(fl http.Flusher) bool {
	if sw.rc.SetWriteDeadline(time.Now().Add(streamStall)) != nil {
		fl.Flush() // a writer that knows no deadlines
		return true
	}
	return sw.rc.Flush() == nil
}

// send writes one event; false when the reader is gone or stuck.
func (sw *streamWriter) send(event, id string, data []byte) bool {
	_ = sw.rc.SetWriteDeadline(time.Now().Add(streamStall))
	var err error
	if id != "" {
		_, err = fmt.Fprintf(sw.w, "event: %s\nid: %s\ndata: %s\n\n", event, id, data)
	} else {
		_, err = fmt.Fprintf(sw.w, "event: %s\ndata: %s\n\n", event, data)
	}
	sw.lastWrite = time.Now()
	return err == nil
}

// batch writes what changed since the last batch: a reload, the groups'
// rows, the headline, the cursor, or, when none of them for keepAlive, a
// ping. false when the reader is gone.
func (sw *streamWriter) batch(groups []string, reload bool, seq uint64) bool {
	if reload && !sw.send("reload", "", []byte("{}")) {
		return false
	}
	now := time.Now()
	gone := 0
	for _, g := range groups {
		// Only the rows the page's filter shows: at 10,000 groups a page
		// filtered to one group was sent every changed row, megabytes
		// a resync, to drop them all. The page reads another filter's
		// rows anew, with a stream of its own.
		if !strings.Contains(g, sw.q) {
			continue
		}
		rw, ok := sw.b.rowOf(g, now)
		if !ok {
			gone++
		}
		data, err := json.Marshal(rw)
		if err == nil && !sw.send("group", "", data) {
			return false
		}
	}
	if !sw.refill(gone, now) {
		return false
	}
	if h, err := json.Marshal(sw.b.headline()); err == nil && string(h) != string(sw.lastHead) {
		sw.lastHead = h
		if !sw.send("status", "", h) {
			return false
		}
	}
	if m := sw.b.matched(sw.q); m != sw.lastMatched {
		sw.lastMatched = m
		data, _ := json.Marshal(map[string]int{"matched": m, "limit": pageLimit})
		if !sw.send("count", "", data) {
			return false
		}
	}
	if c := sw.b.live.cursor(seq); c != sw.lastCursor {
		sw.lastCursor = c
		if !sw.send("cursor", c, []byte("{}")) {
			return false
		}
	}
	if time.Since(sw.lastWrite) >= keepAlive-100*time.Millisecond {
		return sw.send("ping", "", []byte("{}"))
	}
	return true
}

// refill sends, after gone groups left the page, the rows of the groups
// that now come within its first pageLimit: on a page over its bound, a
// listed group that goes makes room for the next one in order, which the
// page could not know of otherwise. false when the reader is gone.
func (sw *streamWriter) refill(gone int, now time.Time) bool {
	if gone == 0 || sw.b.matched(sw.q) < pageLimit {
		return true
	}
	// Only the last rows: the page has the others.
	names, _ := sw.b.pageGroups(sw.q)
	for _, g := range names[max(len(names)-gone, 0):] {
		rw, ok := sw.b.rowOf(g, now)
		if !ok {
			continue
		}
		data, err := json.Marshal(rw)
		if err == nil && !sw.send("group", "", data) {
			return false
		}
	}
	return true
}

// serveTimeline is a timeline of the recent window, for one group
// (?group=) or those whose path contains ?q= (at most 50): as a page, or
// as the SVG alone at /timeline.svg.
func (b *Bridge) serveTimeline(w http.ResponseWriter, r *http.Request) {
	group, q := r.URL.Query().Get("group"), r.URL.Query().Get("q")
	if group == "" && q == "" {
		http.Error(w, "give ?group=PATH, or ?q= to draw the groups whose path contains it", http.StatusBadRequest)
		return
	}
	// As "/": after a stall of the process, wait to catch up; failing
	// that, no owner is drawn as holding now.
	behind := !b.caughtUpAfterStall(r.Context())
	// The page's stream starts from before the drawing is made, as "/"'s
	// does: a change before the script opens the stream is sent, not lost.
	seq := b.live.current()
	now := time.Now()
	match := func(g string) bool { return g == group }
	if group == "" {
		names, _ := b.rows(q, now)
		if len(names) > 50 {
			names = names[:50]
		}
		want := map[string]bool{}
		for _, n := range names {
			want[n.Group] = true
		}
		match = func(g string) bool { return want[g] }
	}
	events := b.live.eventsOf(match)
	held := map[string]string{}
	for _, g := range b.matching(match) {
		rw, ok := b.rowOf(g, now)
		if !ok || rw.Node == "" || behind || !ownerCurrent(rw.State) {
			continue
		}
		held[g] = rw.Node
		events = withCurrent(events, rw)
	}
	chart := timeline.Build(events, now, held)
	if strings.HasSuffix(r.URL.Path, ".svg") {
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Cache-Control", "no-store")
		_ = chart.WriteSVG(w)
		return
	}
	title := "herald: " + group
	if group == "" {
		title = "herald: groups matching “" + q + "”"
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	data := struct {
		Title, Group, Q, Cursor string
		Chart                   template.HTML
		Style                   template.CSS
	}{Title: title, Group: group, Q: q, Cursor: b.live.cursor(seq), Style: template.CSS(timeline.Style)}
	var sb strings.Builder
	_ = chart.WriteHTMLFragment(&sb)
	data.Chart = template.HTML(sb.String()) // herald's own drawing, every text in it escaped
	if err := pageTmpl.ExecuteTemplate(w, "timeline", data); err != nil {
		b.log.Warn("timeline page", "err", err)
	}
}

// ownerCurrent reports whether a row in state shows its owner as read
// now, not only as last seen (stale, unknown, pending, unreadable): only
// such an owner is drawn as holding now.
func ownerCurrent(state string) bool {
	switch state {
	case "ready", "held", "suspect", "unsafe":
		return true
	}
	return false
}

// matching lists the observed groups match accepts.
func (b *Bridge) matching(match func(string) bool) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for g := range b.groups {
		if match(g) {
			out = append(out, g)
		}
	}
	return out
}

// withCurrent adds, when the recent events do not show the current owner
// taking the group (they are bounded, and a bridge sees an old owner first
// in a snapshot), the moment it was first seen holding.
func withCurrent(events []publish.Event, rw row) []publish.Event {
	for _, e := range events {
		if e.Group == rw.Group && e.Owner != nil && e.Owner.Node == rw.Node && e.Type.Gains() {
			return events
		}
	}
	typ := publish.GainOf(elect.Recipe(rw.Recipe))
	e := publish.Event{Type: typ, Group: rw.Group, Recipe: elect.Recipe(rw.Recipe),
		Owner: &publish.Participant{ID: rw.Owner, Node: rw.Node}, Term: rw.Term, Time: rw.Since, Snapshot: !rw.SinceSeen}.WithID()
	out := append([]publish.Event{e}, events...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// shortDuration writes d for people: 3s, 4m12s, 2h05m, 3d04h.
func shortDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}
