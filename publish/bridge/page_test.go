package bridge_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
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

// TestLivePage: the bridge's page in a real browser. Without script it
// already lists the groups (what curl sees); in Chromium it follows a
// leader change within a second, with no reload; the filter hides the
// other groups; a group's timeline holds the tenures its audit log holds.
func TestLivePage(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	jobs, orders := root+"/jobs", root+"/orders"
	s := session(t, addrs)
	alpha := leads(t, candidate(t, s, jobs, "alpha"))
	betaCh := candidate(t, s, jobs, "beta")
	queued(t, s, jobs, 2)
	lk, err := elect.NewLock(s, orders, elect.CreateParents(), elect.WithID("worker-7"))
	if err != nil {
		t.Fatal(err)
	}
	held, err := lk.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "audit.log")
	as, err := audit.New(log)
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, HTTPAddr: "127.0.0.1:0", Source: "page-test",
		Sinks: []publish.Sink{jsSink(t, url), as}})
	waitStatus(t, r.Bridge, 15*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 && len(st.Groups) == 2 })
	base := "http://" + r.HTTPAddr() + "/"

	// Without script: the table is in the HTML.
	resp, err := http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	for _, want := range []string{jobs, orders, "alpha", "worker-7", ">active<", "<caption>", `<label for="q">`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("GET / (no script) lacks %q", want)
		}
	}

	ctx := browsertest.New(t, 90*time.Second)
	ownerOf := func(g string) string {
		var s string
		_ = chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(`(document.querySelector('tr[data-group=%q] td[data-k=owner]')||{}).textContent||""`, g), &s))
		return s
	}
	if err := chromedp.Run(ctx,
		chromedp.Navigate(base),
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-group=%q]`, jobs), chromedp.ByQuery),
		chromedp.Evaluate(`window.heraldMarker = 1`, nil),
	); err != nil {
		t.Fatal(err)
	}
	if o := ownerOf(jobs); !strings.Contains(o, "alpha") {
		t.Fatalf("owner of %s on the page: %q, want alpha", jobs, o)
	}
	time.Sleep(300 * time.Millisecond) // the event stream is open
	if err := alpha.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	beta := leads(t, betaCh)
	for !strings.Contains(ownerOf(jobs), "beta") {
		if time.Since(changed) > time.Second {
			t.Fatalf("the page still shows %q a second after the leader change", ownerOf(jobs))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the page showed the new leader %v after the change", time.Since(changed).Round(time.Millisecond))
	var marker int
	if err := chromedp.Run(ctx, chromedp.Evaluate(`window.heraldMarker || 0`, &marker)); err != nil || marker != 1 {
		t.Errorf("the page reloaded to show the change (marker %d, %v)", marker, err)
	}
	shot(t, ctx, "live-page.png", `#groups tbody tr`, `#h-role`, `#q`)

	// The filter hides the other group.
	var hidden bool
	if err := chromedp.Run(ctx,
		chromedp.SendKeys(`#q`, "orders", chromedp.ByQuery),
		chromedp.Evaluate(fmt.Sprintf(`document.querySelector('tr[data-group=%q]').hidden`, jobs), &hidden),
	); err != nil || !hidden {
		t.Errorf("filter %q left %s shown (%v)", "orders", jobs, err)
	}

	// A lock release reaches the page too, then the group's timeline.
	if err := held.Release(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the release on the page", func() bool { return strings.TrimSpace(ownerOf(orders)) == "—" })
	if err := beta.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "jobs ownerless on the page", func() bool { return strings.TrimSpace(ownerOf(jobs)) == "—" })

	// How long a group has been without an owner goes on counting on the
	// open page, with no event to update it.
	ownerless := func(g string) string {
		var s string
		_ = chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(`(document.querySelector('tr[data-group=%q] td[data-k=ownerless]')||{}).textContent||""`, g), &s))
		return strings.TrimSpace(s)
	}
	waitFor(t, 5*time.Second, "jobs's time without an owner shown", func() bool { return ownerless(jobs) != "" })
	first := ownerless(jobs)
	waitFor(t, 5*time.Second, "jobs's time without an owner counting", func() bool { return ownerless(jobs) != first })
	// Served without script, the row has its badge's class.
	resp, err = http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !strings.Contains(string(body), `class="state state-no-owner"`) {
		t.Errorf("GET / gives a group without an owner no state-no-owner class")
	}

	events, err := audit.ReadAll(context.Background(), log, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, tn := range audit.History(events) {
		if tn.Group == jobs {
			want = append(want, fmt.Sprint(tn.Term))
		}
	}
	var terms []string
	if err := chromedp.Run(ctx,
		chromedp.Navigate(base+"timeline?group="+jobs),
		chromedp.WaitVisible(`svg.herald-timeline`, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll("g.tenure")].map(g => g.dataset.term)`, &terms),
	); err != nil {
		t.Fatal(err)
	}
	if len(want) != 2 || strings.Join(terms, ",") != strings.Join(want, ",") {
		t.Errorf("timeline of %s shows terms %v; the audit log holds %v (alpha's and beta's)", jobs, terms, want)
	}
	shot(t, ctx, "live-timeline.png", `svg.herald-timeline g.tenure`, `table.tenures tbody tr`)
}

// shot takes a screenshot after checking that the elements it must show
// are on the page (the check is on the elements, not on pixels); with
// HERALD_SCREENSHOTS set it keeps the picture there (the README's).
func shot(t *testing.T, ctx context.Context, name string, selectors ...string) {
	t.Helper()
	for _, sel := range selectors {
		var n int
		if err := chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(`document.querySelectorAll(%q).length`, sel), &n)); err != nil || n == 0 {
			t.Errorf("%s: no %s on the page (%v)", name, sel, err)
		}
	}
	var png []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil || len(png) < 1000 {
		t.Errorf("%s: screenshot failed (%d bytes, %v)", name, len(png), err)
		return
	}
	if dir := os.Getenv("HERALD_SCREENSHOTS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Error(err)
		}
	}
}
