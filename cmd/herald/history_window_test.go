package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// windowStory is an election group g and a lock group l around a window
// from t0+1h to t0+3h: in g, alpha held before it, bravo across its start,
// charlie inside it, then a stretch in which owners may be missing (a
// restarted bridge found the group empty, gap) inside it, delta across its
// end, echo after it, and another such stretch after it; in l, hotel took
// the lock before the window and holds it still. Candidates joined before
// and inside the window.
func windowStory(g, l string, t0 time.Time) []publish.Event {
	var zxid int64
	p := func(id string, seq int) *publish.Participant {
		return &publish.Participant{ID: id, Node: "n_000000000" + string(rune('0'+seq)), Session: "0x1"}
	}
	ev := func(min int, group string, typ publish.Type, owner, prev, cand *publish.Participant, term int64) publish.Event {
		zxid += 10
		e := publish.Event{Type: typ, Group: group, Recipe: elect.RecipeElection, Owner: owner, Previous: prev, Candidate: cand,
			Term: term, Zxid: zxid, Time: t0.Add(time.Duration(min) * time.Minute), Source: "bridge-a"}
		if group == l {
			e.Recipe = elect.RecipeLock
		}
		if typ.Loses() && prev != nil {
			e.Reason = elect.ReasonResigned
		}
		return e.WithID()
	}
	alpha, bravo, charlie, delta, echo := p("alpha", 1), p("bravo", 2), p("charlie", 3), p("delta", 4), p("echo", 5)
	hotel := &publish.Participant{ID: "hotel", Node: "lock-0000000001", Session: "0x2"}
	empty := func(min int) publish.Event {
		e := ev(min, g, publish.LeaderLost, nil, nil, nil, 0)
		e.Snapshot, e.Gap = true, true
		return e.WithID()
	}
	return []publish.Event{
		ev(-60, l, publish.LockAcquired, hotel, nil, nil, 1),
		ev(0, g, publish.LeaderElected, alpha, nil, nil, 100),
		ev(10, g, publish.CandidateJoined, nil, nil, p("early", 6), 0),
		ev(30, g, publish.LeaderLost, nil, alpha, nil, 100),
		ev(30, g, publish.LeaderElected, bravo, alpha, nil, 200),
		ev(90, g, publish.LeaderLost, nil, bravo, nil, 200),
		ev(90, g, publish.LeaderElected, charlie, bravo, nil, 300),
		ev(105, g, publish.CandidateJoined, nil, nil, p("inside", 7), 0),
		ev(120, g, publish.LeaderLost, nil, charlie, nil, 300),
		empty(140), // owners may be missing from charlie's end (+2h) to +2h20m
		ev(160, g, publish.LeaderElected, delta, nil, nil, 400),
		ev(210, g, publish.LeaderLost, nil, delta, nil, 400),
		ev(240, g, publish.LeaderElected, echo, nil, nil, 500),
		ev(270, g, publish.LeaderLost, nil, echo, nil, 500),
		empty(300), // after the window
	}
}

// inWindow says which rows of windowStory overlap its window.
func inWindow(x audit.Tenure, t0 time.Time) bool {
	switch {
	case x.Missing:
		return x.Until.Equal(t0.Add(140 * time.Minute))
	case x.Owner.ID == "alpha", x.Owner.ID == "echo":
		return false
	}
	return true // bravo, charlie, delta, and hotel still holding
}

// tableRows is the rows of history's table, each with its spacing
// made single (the columns' widths depend on the rows shown).
func tableRows(out string) []string {
	var rows []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, "GROUP") || strings.HasPrefix(line, "rows overlapping") {
			continue
		}
		rows = append(rows, strings.Join(strings.Fields(line), " "))
	}
	return rows
}

// TestHistoryWindowShowsTheRowsThatOverlapIt: --since and --until show,
// from the audit log, NATS and Kafka alike, exactly the rows of the whole
// history that overlap the window, as the whole history has them (not cut
// at its edges): a tenure across either edge, one inside, the lock held
// since before the window and still open, the stretch of missing owners
// inside it; not those before or after it. The table says which window it
// shows; --json is the same rows and nothing else; --html and --svg draw
// those rows only, the candidate mark inside the window only, over the
// window's time.
func TestHistoryWindowShowsTheRowsThatOverlapIt(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-72 * time.Hour)
	g := uniq(t)
	l := g + "-lock"
	story := windowStory(g, l, t0)
	since, until := t0.Add(time.Hour).Format(time.RFC3339), t0.Add(3*time.Hour).Format(time.RFC3339)

	path := auditLog(t, story...)
	natsURL, js := jetStreamSink(t)
	write(t, js, story...)
	kc := kafkatest.Start(t)
	ks, err := kafkasink.New(kafkasink.Config{Brokers: kc.Addrs(), Partitions: 1, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ks.Close() })
	write(t, ks, story...)

	for _, src := range [][]string{{"--audit", path}, {"--nats", natsURL}, {"--kafka", strings.Join(kc.Addrs(), ",")}} {
		window := append(slices.Clone(src), "--since", since, "--until", until)
		var all []audit.Tenure
		for _, grp := range []string{g, l} {
			all = append(all, historyJSON(t, append([]string{grp}, src...)...)...)
		}
		if len(all) != 8 {
			t.Fatalf("history %v: %d rows, want 8 (5 tenures and 2 stretches of missing owners in %s, 1 tenure in %s): %+v", src, len(all), g, l, all)
		}
		var want, got []string
		for _, x := range all {
			if inWindow(x, t0) {
				b, _ := json.Marshal(x)
				want = append(want, string(b))
			}
		}
		for _, grp := range []string{g, l} {
			for _, x := range historyJSON(t, append([]string{grp}, window...)...) {
				b, _ := json.Marshal(x)
				got = append(got, string(b))
			}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("history %v --json: rows\n%s\nwant the rows of the whole history that overlap the window, unchanged:\n%s", window, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}

		// The table: the same rows as the whole history's, and a line
		// naming the window first.
		whole, stderr, code := heraldRun(t, nil, append([]string{"history", g}, src...)...)
		if code != 0 {
			t.Fatalf("history %v: exit %d: %s", src, code, stderr)
		}
		var wantRows []string
		for _, r := range tableRows(whole) {
			if strings.Contains(r, "bravo") || strings.Contains(r, "charlie") || strings.Contains(r, "delta") ||
				strings.Contains(r, "owners may be missing") && strings.Contains(r, t0.Add(140*time.Minute).Format(time.RFC3339)) {
				wantRows = append(wantRows, r)
			}
		}
		out, stderr, code := heraldRun(t, nil, append([]string{"history", g}, window...)...)
		first, _, _ := strings.Cut(out, "\n")
		if code != 0 || first != "rows overlapping "+since+" to "+until+", shown whole (times as recorded, not cut to the window)" ||
			len(wantRows) != 4 || strings.Join(tableRows(out), "\n") != strings.Join(wantRows, "\n") {
			t.Errorf("history %v: exit %d:\n%s%s\nwant the window named, then these rows of the whole history:\n%s", window, code, out, stderr, strings.Join(wantRows, "\n"))
		}
	}

	// The drawings: only the rows in the window, over the window's time.
	dir := t.TempDir()
	page, svg := filepath.Join(dir, "window.html"), filepath.Join(dir, "window.svg")
	out, stderr, code := heraldRun(t, nil, "history", "--audit", path, "--since", since, "--until", until, "--html", page, "--svg", svg)
	if code != 0 || !strings.Contains(out, "wrote "+page+": 4 tenures of 2 groups") {
		t.Fatalf("history --html --svg with a window: exit %d, want 4 tenures (bravo, charlie, delta, hotel): %s%s", code, out, stderr)
	}
	owner := regexp.MustCompile(`<g class="tenure" data-group="[^"]*" data-owner="([^"]*)"`)
	for _, f := range []string{page, svg} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var owners []string
		for _, m := range owner.FindAllStringSubmatch(string(b), -1) {
			owners = append(owners, m[1])
		}
		title := t0.Add(time.Hour).Format("15:04") + " to " + t0.Add(3*time.Hour).Format("15:04") + " (UTC)"
		if strings.Join(owners, " ") != "n_0000000002 n_0000000003 n_0000000004 lock-0000000001" ||
			strings.Count(string(b), `class="mark joined"`) != 1 || !strings.Contains(string(b), "candidate inside (") ||
			!strings.Contains(string(b), "Who led when: "+title) {
			t.Errorf("%s: bars of %v, %d joined marks, want bravo, charlie, delta, hotel, the mark inside the window, the title %q:\n%s",
				filepath.Base(f), owners, strings.Count(string(b), `class="mark joined"`), title, b)
		}
	}
	if b, _ := os.ReadFile(page); strings.Count(string(b), `<tr class="missing">`) != 1 || !strings.Contains(string(b), "the rows overlapping "+since) {
		t.Errorf("the page lists %d stretches of missing owners, want the one in the window, and names the window:\n%s", strings.Count(string(b), `<tr class="missing">`), b)
	}
}

// TestHistoryWindowOfTheRecentPast: --since and --until as durations
// before now. A log whose events are all three hours old shows nothing
// since an hour ago (exit 0, saying so; --json an empty array), and its
// rows up to two hours ago or since a day ago (3d: days). A log of fresh
// events shows them since an hour ago, its open tenure too; a window
// that lies in the future shows nothing, not even the open tenure: the
// events cannot tell it lasts that long.
func TestHistoryWindowOfTheRecentPast(t *testing.T) {
	g := uniq(t)
	old := story(g) // alpha, then bravo, two minutes ago
	for i := range old {
		old[i].Time = old[i].Time.Add(-3 * time.Hour)
	}
	end := finalLoss(g)
	end.Time = old[len(old)-1].Time.Add(time.Minute)
	oldLog := auditLog(t, append(old, end.WithID())...)
	freshLog := auditLog(t, story(g)...)

	for _, tc := range []struct {
		log    string
		window []string
		rows   int
	}{
		{oldLog, []string{"--since", "1h"}, 0},
		{oldLog, []string{"--since", "90m", "--until", "10m"}, 0},
		{oldLog, []string{"--until", "2h"}, 2},
		{oldLog, []string{"--since", "3d"}, 2},
		{oldLog, []string{"--since", "1d12h", "--until", "2h30m"}, 2},
		{freshLog, []string{"--since", "1h"}, 2},
		{freshLog, []string{"--until", "1h"}, 0},
		{freshLog, []string{"--since", time.Now().Add(24 * time.Hour).Format(time.RFC3339)}, 0},
	} {
		args := append([]string{"history", g, "--audit", tc.log}, tc.window...)
		out, stderr, code := heraldRun(t, nil, args...)
		rows := tableRows(out)
		empty := len(rows) == 1 && strings.HasPrefix(rows[0], "no leadership or lock events recorded in this window")
		if code != 0 || !strings.HasPrefix(out, "rows overlapping ") || tc.rows == 0 && !empty || tc.rows > 0 && len(rows) != tc.rows {
			t.Errorf("%s %v: exit %d, want %d rows after the window's line:\n%s%s", filepath.Base(tc.log), tc.window, code, tc.rows, out, stderr)
		}
		if ts := historyJSON(t, args[1:]...); len(ts) != tc.rows {
			t.Errorf("%s %v --json: %d rows, want %d: %+v", filepath.Base(tc.log), tc.window, len(ts), tc.rows, ts)
		}
	}
}

// TestHistoryWindowBadValues: a --since or --until that is neither an
// RFC 3339 time nor a duration, a negative duration, or a --since after
// --until is a usage error (exit 2) naming the flag and both forms it
// takes; it is found before any source is read.
func TestHistoryWindowBadValues(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such.log")
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--since", "yesterday"}, "--since"},
		{[]string{"--until", "5x"}, "--until"},
		{[]string{"--since", "-2h"}, "--since"},
		{[]string{"--until", "2026-11-20T10:00"}, "--until"},
		{[]string{"--since", "2026-11-20"}, "--since"},
		{[]string{"--since", "2026-11-20T12:00:00Z", "--until", "2026-11-20T10:00:00Z"}, "--since"},
		{[]string{"--since", "2h", "--until", "3h"}, "--until"},
	} {
		_, stderr, code := heraldRun(t, nil, append([]string{"history", "--audit", missing}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.flag) || !strings.Contains(stderr, "RFC 3339 time (2026-11-20T10:00:00Z") ||
			!strings.Contains(stderr, "duration before now (90m, 2h, 3d") {
			t.Errorf("history %v: exit %d, want %d naming %s and both forms: %s", tc.args, code, exitUsage, tc.flag, stderr)
		}
	}
}

// TestHistoryWindowKeepsAnEndNotSeen: foxtrot was last seen holding at
// t0+10m; the bridge was then down, and at t0+100m a snapshot found golf
// holding. Foxtrot ended somewhere in between, unseen, so it may have
// held into a window from t0+1h: its row is shown there (until "≥ t0+10m",
// as recorded). It was hidden, as if it had ended when last seen. Golf
// began somewhere in between too, so a window from t0+1h to t0+90m shows
// it as well (from "≤ t0+100m"): it was hidden, as if it had begun when
// first seen, and a window inside a bridge's stall showed the owner
// before it alone. A window that begins after golf was found holding
// leaves foxtrot out, and one that ends before foxtrot was first seen
// shows neither.
func TestHistoryWindowKeepsAnEndNotSeen(t *testing.T) {
	g := uniq(t)
	t0 := time.Now().UTC().Add(-5 * time.Hour).Truncate(time.Second)
	foxtrot := &publish.Participant{ID: "foxtrot", Node: "n_0000000001", Session: "0x1"}
	golf := &publish.Participant{ID: "golf", Node: "n_0000000002", Session: "0x2"}
	elected := publish.Event{Type: publish.LeaderElected, Group: g, Recipe: elect.RecipeElection, Owner: foxtrot,
		Term: 10, Zxid: 10, Time: t0.Add(10 * time.Minute), Source: "bridge-a"}.WithID()
	found := publish.Event{Type: publish.LeaderElected, Group: g, Recipe: elect.RecipeElection, Owner: golf,
		Term: 20, Zxid: 20, Time: t0.Add(100 * time.Minute), Snapshot: true, Gap: true, Source: "bridge-a"}.WithID()
	path := auditLog(t, elected, found)
	ids := func(ts []audit.Tenure) (out []string) {
		for _, x := range ts {
			out = append(out, x.Owner.ID)
		}
		return out
	}
	all := historyJSON(t, g, "--audit", path)
	if got := ids(all); !slices.Equal(got, []string{"foxtrot", "golf"}) || all[0].UntilSeen {
		t.Fatalf("the whole history: %v (foxtrot's end seen: %v); want foxtrot, its end not seen, then golf", got, all[0].UntilSeen)
	}
	for _, tc := range []struct {
		since, until time.Duration
		want         []string
	}{
		{60 * time.Minute, 90 * time.Minute, []string{"foxtrot", "golf"}},
		{60 * time.Minute, 0, []string{"foxtrot", "golf"}},
		{110 * time.Minute, 0, []string{"golf"}},
		{0, 5 * time.Minute, nil},
	} {
		args := []string{g, "--audit", path, "--since", t0.Add(tc.since).Format(time.RFC3339)}
		if tc.until != 0 {
			args = append(args, "--until", t0.Add(tc.until).Format(time.RFC3339))
		}
		if got := ids(historyJSON(t, args...)); !slices.Equal(got, tc.want) {
			t.Errorf("%v: rows %v, want %v", args[3:], got, tc.want)
		}
		// The chart draws the same rows.
		svg, stderr, code := heraldRun(t, nil, append([]string{"history", "--svg", "-"}, args...)...)
		for _, id := range []string{"foxtrot", "golf"} {
			if code != 0 || strings.Contains(svg, id) != slices.Contains(tc.want, id) {
				t.Errorf("%v --svg: exit %d, %s drawn: %v, want %v:\n%s", args[3:], code, id, strings.Contains(svg, id), slices.Contains(tc.want, id), stderr)
			}
		}
	}
}
