package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/zkherald/herald/internal/browsertest"
	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestLivePageGreysAHungBridge: a page open on a bridge whose process
// hangs (SIGSTOP: the connection stays open, nothing comes) greys its rows
// and the bridge's header and says its updates are interrupted, within a
// few of the stream's keep-alives; when the bridge runs again the page is
// live again and shows the owner that took over meanwhile. Before, it
// said "Updated live." with the gone owner held and the bridge healthy for
// as long as the hang lasted.
func TestLivePageGreysAHungBridge(t *testing.T) {
	zk := zktest.Shared(t)
	g := uniq(t)
	_, held := heldLock(t, zk.Addrs(), g)
	b, addr := pageBridge(t, zk.ConnectString(), g, "30s")
	ctx := browsertest.New(t, 120*time.Second)
	eval := func(js string) string {
		var s string
		_ = chromedp.Run(ctx, chromedp.Evaluate(js, &s))
		return s
	}
	sel := fmt.Sprintf(`tr[data-group=%q]`, g)
	if err := chromedp.Run(ctx, chromedp.Navigate("http://"+addr+"/"), chromedp.WaitVisible(sel, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	state := func() string {
		return eval(fmt.Sprintf(`[document.getElementById("live-state").textContent,
			document.getElementById("groups").className, document.getElementById("bridge").className,
			(document.getElementById("h-interrupted") || {hidden: true}).hidden ? "" : "note",
			document.querySelector('%s').textContent].join("|")`, sel))
	}
	interrupted := func(s string) bool {
		f := strings.Split(s, "|")
		return len(f) == 5 && strings.Contains(f[0], "interrupted") && strings.Contains(f[1], "interrupted") &&
			strings.Contains(f[2], "interrupted") && f[3] == "note"
	}
	// Live and quiet for longer than the watchdog's limit: the keep-alive
	// holds the page live.
	time.Sleep(8 * time.Second)
	if s := state(); interrupted(s) || !strings.HasPrefix(s, "Updated live.") {
		t.Fatalf("a running bridge with nothing changing: the page reads %q", s)
	}

	if err := signalPID(b.cmd.Process.Pid, sigStop); err != nil {
		t.Fatal(err)
	}
	defer signalPID(b.cmd.Process.Pid, sigCont)
	stopped := time.Now()
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, next := heldLock(t, zk.Addrs(), g)
	if err := waitFor(12*time.Second, func() bool { return interrupted(state()) }); err != nil {
		t.Fatalf("%v into the hang, the page reads %q; want rows and header greyed, updates said interrupted", time.Since(stopped).Round(time.Second), state())
	}
	t.Logf("greyed %v into the hang", time.Since(stopped).Round(100*time.Millisecond))

	if err := signalPID(b.cmd.Process.Pid, sigCont); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(15*time.Second, func() bool {
		s := state()
		return !interrupted(s) && strings.HasPrefix(s, "Updated live.") && strings.Contains(s, next.Node())
	}); err != nil {
		t.Fatalf("after the hang, the page reads %q; want it live again, with %s", state(), next.Node())
	}
	if s := state(); strings.Contains(s, "interrupted") {
		t.Fatalf("after the hang, the page still marked: %q", s)
	}
}

// TestLivePageSaysWhenItsRowsAreNotConfirmed: a page whose stream is live
// while the bridge cannot reach ZooKeeper shows every row stale, and its
// caption says so, in the browser and without script. It used to say
// "Updated live." alone, as if the owners shown were current.
func TestLivePageSaysWhenItsRowsAreNotConfirmed(t *testing.T) {
	p, servers, g := proxiedZK(t)
	heldLock(t, servers, g)
	_, addr := pageBridge(t, p.Addr(), g, "30s")
	ctx := browsertest.New(t, 120*time.Second)
	caption := func() string {
		var s string
		_ = chromedp.Run(ctx, chromedp.Evaluate(`document.getElementById("live-state").textContent`, &s))
		return s
	}
	sel := fmt.Sprintf(`tr[data-group=%q]`, g)
	if err := chromedp.Run(ctx, chromedp.Navigate("http://"+addr+"/"), chromedp.WaitVisible(sel, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(10*time.Second, func() bool { return caption() == "Updated live." }); err != nil {
		t.Fatalf("a live page with its owner held: caption %q, want \"Updated live.\"", caption())
	}

	p.Refuse(true) // the bridge's connection goes, and no new one comes
	p.Cut()
	const want = "Updated live, but 1 group is not confirmed now (see its state)."
	if err := waitFor(15*time.Second, func() bool { return caption() == want }); err != nil {
		t.Fatalf("with the bridge cut off from ZooKeeper: caption %q, want %q", caption(), want)
	}
	body := httpGet(t, "http://"+addr+"/")
	if !strings.Contains(body, `data-state="stale"`) || !strings.Contains(body, `<span id="live-state">`+want+`</span>`) {
		t.Errorf("GET / (no script) with the bridge cut off: want its stale row and the caption %q:\n%s", want, body)
	}

	p.Refuse(false)
	if err := waitFor(30*time.Second, func() bool { return caption() == "Updated live." }); err != nil {
		t.Fatalf("ZooKeeper reachable again: caption %q, want \"Updated live.\"", caption())
	}
}

// proxiedZK puts a fault proxy in front of the shared ZooKeeper, for a
// bridge to reach it through, and returns it with the servers
// themselves (for the test's own sessions) and a new group's name.
func proxiedZK(t *testing.T) (*faultproxy.Proxy, []string, string) {
	t.Helper()
	zk := zktest.Shared(t)
	p, err := faultproxy.New(zk.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, zk.Addrs(), uniq(t)
}

// stallBridge stops b's process long enough to count as a stall, makes
// p keep ZooKeeper from answering its catch-up, and runs b again; p
// stays silent until the test says otherwise.
func stallBridge(t *testing.T, b *proc, p *faultproxy.Proxy) {
	t.Helper()
	if err := signalPID(b.cmd.Process.Pid, sigStop); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = signalPID(b.cmd.Process.Pid, sigCont) }) // on a failure
	p.Blackhole(true)
	time.Sleep(2500 * time.Millisecond)
	if err := signalPID(b.cmd.Process.Pid, sigCont); err != nil {
		t.Fatal(err)
	}
}

// pageBridge starts a bridge watching g with an audit log and its live
// page on a free port, and returns it with the page's address once it
// serves.
func pageBridge(t *testing.T, zk, g, sessionTimeout string) (*proc, string) {
	t.Helper()
	b := start(t, nil, "bridge", "--zk", zk, "--session-timeout", sessionTimeout, "--watch", g,
		"--audit", filepath.Join(t.TempDir(), "audit.log"), "--http", "127.0.0.1:0",
		"--nats-listen", "127.0.0.1:0", "--nats-store", t.TempDir())
	return b, waitMatch(t, b, regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`), 30*time.Second)
}
