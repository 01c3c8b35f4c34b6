package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/browsertest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

// timelineLog writes an audit log with two groups: an election with a
// resignation, a candidate joining, a tenure whose end nobody saw and a
// snapshot after a stretch not observed (gap); and a lock held and
// released.
func timelineLog(t *testing.T) string {
	t.Helper()
	t0 := time.Date(2026, 11, 24, 3, 12, 0, 0, time.UTC)
	p := func(id, node string) *publish.Participant { return &publish.Participant{ID: id, Node: node} }
	ev := func(at time.Duration, g string, typ publish.Type, owner, prev, cand *publish.Participant, term int64, e publish.Event) publish.Event {
		e.Type, e.Group, e.Time, e.Term, e.Zxid, e.Source = typ, g, t0.Add(at), term, int64(at/time.Millisecond), "bridge-a"
		e.Owner, e.Previous, e.Candidate = owner, prev, cand
		e.Recipe = elect.RecipeElection
		if strings.HasPrefix(string(typ), "lock.") {
			e.Recipe = elect.RecipeLock
		}
		node := ""
		switch {
		case cand != nil:
			node = cand.Node
		case typ == publish.LeaderLost || typ == publish.LockReleased:
			node = prev.Node
		default:
			node = owner.Node
		}
		e.ID = publish.MakeID(g, node, typ)
		return e
	}
	const g, l = "/demo/jobs/nightly", "/demo/locks/<orders>"
	alpha, beta, delta, eps := p("alpha", "n_0000000001"), p("beta", "n_0000000002"), p("delta", "n_0000000004"), p("epsilon", "n_0000000005")
	x := p("x", "lock-0000000001")
	events := []publish.Event{
		ev(0, g, publish.LeaderElected, alpha, nil, nil, 10, publish.Event{}),
		ev(0, l, publish.LockAcquired, x, nil, nil, 5, publish.Event{}),
		ev(5*time.Second, g, publish.CandidateJoined, alpha, nil, beta, 10, publish.Event{}),
		ev(10*time.Second, g, publish.LeaderLost, nil, alpha, nil, 10, publish.Event{Reason: elect.ReasonResigned}),
		ev(10*time.Second, g, publish.LeaderElected, beta, alpha, nil, 20, publish.Event{}),
		ev(15*time.Second, l, publish.LockReleased, nil, x, nil, 5, publish.Event{Reason: elect.ReasonReleased}),
		// The bridge was away; when back, delta owns and an owner may have
		// come and gone in between.
		ev(40*time.Second, g, publish.LeaderElected, delta, nil, nil, 40, publish.Event{Snapshot: true, Gap: true}),
		ev(50*time.Second, g, publish.LeaderLost, nil, delta, nil, 40, publish.Event{Reason: elect.ReasonSessionExpired}),
		ev(50*time.Second, g, publish.LeaderElected, eps, delta, nil, 50, publish.Event{}),
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	s, err := audit.New(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, events); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHistoryTimelineInABrowser: `herald history --html` and `--svg` write
// files that Chromium opens with no server: one bar per tenure of the log,
// the gap drawn as a gap, the candidate mark, and the table.
func TestHistoryTimelineInABrowser(t *testing.T) {
	log := timelineLog(t)
	tenures := historyJSON(t, "--audit", log)
	gaps := 0
	for _, tn := range tenures {
		if tn.Gap {
			gaps++
		}
	}
	if len(tenures) != 5 || gaps != 1 {
		t.Fatalf("history of the log: %d tenures, %d with a gap before; want 5 and 1: %+v", len(tenures), gaps, tenures)
	}
	dir := t.TempDir()
	page, svg := filepath.Join(dir, "timeline.html"), filepath.Join(dir, "timeline.svg")
	out, stderr, code := heraldRun(t, nil, "history", "--audit", log, "--html", page, "--svg", svg)
	if code != 0 || !strings.Contains(out, "wrote "+page+": 5 tenures of 2 groups") {
		t.Fatalf("history --html --svg: exit %d: %s%s", code, out, stderr)
	}
	ctx := browsertest.New(t, 60*time.Second)
	for _, f := range []string{page, svg} {
		var bars, gapBars, joined, unseen int
		var title string
		if err := chromedp.Run(ctx,
			chromedp.Navigate("file://"+f),
			chromedp.WaitReady("svg.herald-timeline"),
			chromedp.Evaluate(`document.querySelectorAll("g.tenure").length`, &bars),
			chromedp.Evaluate(`document.querySelectorAll("g.gap").length`, &gapBars),
			chromedp.Evaluate(`document.querySelectorAll("path.mark.joined").length`, &joined),
			chromedp.Evaluate(`document.querySelectorAll("g.unseen").length`, &unseen),
			chromedp.Evaluate(`document.querySelector("svg title").textContent`, &title),
		); err != nil {
			t.Fatalf("open %s: %v", f, err)
		}
		if bars != len(tenures) || gapBars != gaps || joined != 1 || !strings.Contains(title, "Who led when") {
			t.Errorf("%s: %d bars, %d gaps, %d joined marks, title %q; want %d bars, %d gap, 1 mark", filepath.Base(f), bars, gapBars, joined, title, len(tenures), gaps)
		}
		var terms []string
		if err := chromedp.Run(ctx, chromedp.Evaluate(`[...document.querySelectorAll("g.tenure")].map(g => g.dataset.term)`, &terms)); err != nil {
			t.Fatal(err)
		}
		if strings.Join(terms, ",") != "10,20,40,50,5" {
			t.Errorf("%s: bars for terms %v, want 10,20,40,50 then the lock's 5", filepath.Base(f), terms)
		}
	}
	// The page also lists the tenures as a table, the group name escaped.
	var rows int
	var firstGroup string
	if err := chromedp.Run(ctx,
		chromedp.Navigate("file://"+page),
		chromedp.WaitReady("table.tenures"),
		chromedp.Evaluate(`document.querySelectorAll("table.tenures tbody tr").length`, &rows),
		chromedp.Evaluate(`document.querySelector("table.tenures tbody tr:last-child td").textContent`, &firstGroup),
	); err != nil {
		t.Fatal(err)
	}
	if rows != len(tenures) || firstGroup != "/demo/locks/<orders>" {
		t.Errorf("table: %d rows, last group %q; want %d rows and the lock group as written", rows, firstGroup, len(tenures))
	}
	var shot []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&shot, 100)); err != nil || len(shot) == 0 {
		t.Errorf("screenshot: %v", err)
	}
	if dst := os.Getenv("HERALD_SCREENSHOTS"); dst != "" {
		_ = os.WriteFile(filepath.Join(dst, "timeline.png"), shot, 0o644)
	}

	// A file that cannot be written says so, and what to do.
	_, stderr, code = heraldRun(t, nil, "history", "--audit", log, "--html", filepath.Join(dir, "missing", "x.html"))
	if code == 0 || !strings.Contains(stderr, "--html") || !strings.Contains(stderr, "directory you can write") {
		t.Errorf("--html into a missing directory: exit %d: %s", code, stderr)
	}
}

// writeWhole replaces a regular file atomically, keeping its mode; follows
// a symbolic link and replaces the file it names, the link kept; writes
// into a FIFO (as into a device or /dev/stdout) rather than replacing it.
func TestHistoryFileWriteKeepsLinksModesAndSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	// A new file: 0666 less the umask, as any file the process creates
	// (0644 under the usual 022; TestHistoryFileHonoursTheUmask).
	probe, err := os.OpenFile(filepath.Join(dir, "probe"), os.O_CREATE|os.O_WRONLY, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	probeFI, _ := probe.Stat()
	probe.Close()
	fresh := filepath.Join(dir, "fresh.html")
	if err := writeWhole(fresh, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(fresh); fi.Mode().Perm() != probeFI.Mode().Perm() || read(fresh) != "new" {
		t.Errorf("new file: mode %v, %q; want %v and the data", fi.Mode(), read(fresh), probeFI.Mode().Perm())
	}

	// An existing file keeps its mode.
	private := filepath.Join(dir, "private.html")
	if err := os.WriteFile(private, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeWhole(private, []byte("page")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(private); fi.Mode().Perm() != 0o600 || read(private) != "page" {
		t.Errorf("a 0600 file rewritten: mode %v, %q; want 0600 kept", fi.Mode(), read(private))
	}

	// A link, relative, into another directory: the link stays, the file
	// it names is replaced and keeps its mode.
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "real", "timeline.html")
	if err := os.WriteFile(real, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.html")
	if err := os.Symlink(filepath.Join("real", "timeline.html"), link); err != nil {
		t.Fatal(err)
	}
	if err := writeWhole(link, []byte("through")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a file (%v, %v)", fi.Mode(), err)
	}
	if fi, _ := os.Stat(real); read(real) != "through" || fi.Mode().Perm() != 0o640 {
		t.Errorf("the linked file: %q, mode %v; want the data, 0640 kept", read(real), fi.Mode())
	}

	// A link to a file not there yet: the file is made where it points.
	dangling := filepath.Join(dir, "dangling.svg")
	if err := os.Symlink(filepath.Join("real", "later.svg"), dangling); err != nil {
		t.Fatal(err)
	}
	if err := writeWhole(dangling, []byte("svg")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(dangling); err != nil || fi.Mode()&os.ModeSymlink == 0 || read(filepath.Join(dir, "real", "later.svg")) != "svg" {
		t.Errorf("a link to a missing file: link %v (%v); want the link kept and the file made", fi.Mode(), err)
	}

	// A FIFO is written into, not replaced.
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // blocks until the writer opens it
		got <- string(b)
	}()
	if err := writeWhole(fifo, []byte("piped")); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "piped" {
			t.Errorf("read from the FIFO %q, want %q", s, "piped")
		}
	case <-time.After(5 * time.Second):
		// Replaced by a file, the FIFO never sees a writer: unblock the reader.
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Errorf("nothing came through the FIFO")
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v (%v)", fi.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// --html - writes the page to standard output, and what herald says about
// it to standard error; no file named "-" is made.
func TestHistoryHTMLToStandardOutput(t *testing.T) {
	log := timelineLog(t)
	dir := t.TempDir()
	svg := filepath.Join(dir, "t.svg")
	cmd := exec.Command(heraldBin, "history", "--audit", log, "--html", "-", "--svg", svg)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("history --html -: %v\n%s", err, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "<!doctype html>") || !strings.HasSuffix(strings.TrimSpace(stdout.String()), "</html>") {
		t.Errorf("standard output is not the page alone:\n%.300s ... %.300s", stdout.String(), stdout.String()[max(0, stdout.Len()-300):])
	}
	if !strings.Contains(stderr.String(), "wrote standard output: 5 tenures of 2 groups") || !strings.Contains(stderr.String(), "wrote "+svg) {
		t.Errorf("standard error: %q; want what was written said there", stderr.String())
	}
	if _, err := os.Lstat(filepath.Join(dir, "-")); err == nil {
		t.Errorf("a file named - was made")
	}
	// Both to standard output would run the page and the SVG together.
	cmd = exec.Command(heraldBin, "history", "--audit", log, "--html", "-", "--svg", "-")
	cmd.Dir = dir
	stderr.Reset()
	cmd.Stderr = &stderr
	_ = cmd.Run()
	if code := exitCode(cmd.ProcessState); code != exitUsage || !strings.Contains(stderr.String(), "standard output") {
		t.Errorf("--html - --svg -: exit %d, %q; want a usage error", code, stderr.String())
	}
	// --json with a drawing was dropped in silence: the chart was written
	// and no JSON printed.
	for _, draw := range []string{"--html", "--svg"} {
		_, stderr, code := heraldRun(t, nil, "history", "--audit", log, draw, filepath.Join(dir, "x"), "--json")
		if code != exitUsage || !strings.Contains(stderr, "--json with --html or --svg") {
			t.Errorf("%s with --json: exit %d, %q; want a usage error", draw, code, stderr)
		}
		if _, err := os.Lstat(filepath.Join(dir, "x")); err == nil {
			t.Errorf("%s with --json: the drawing was written", draw)
		}
	}
}
