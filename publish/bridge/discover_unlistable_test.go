package bridge_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/browsertest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestDiscoverRootNoLongerListableIsNotReady: a discover root listed once
// has its ACL changed so that the bridge may not READ it, and a group is
// made below it. The bridge notices, fails to list it, and holds its
// heartbeats back; /readyz said ready all along, so a probe vouched for a
// bridge that could confirm nothing. It must say, over HTTP, which root
// fails and why (list_errors too), as must the live page's header, and be
// ready again once it can list it.
func TestDiscoverRootNoLongerListableIsNotReady(t *testing.T) {
	a, b := groupPath(t)+"-a", groupPath(t)+"-b"
	addrs := zkAddrs(t)
	s := session(t, addrs)
	makeOpen(t, s, "/t", a, b)
	t.Cleanup(func() { _, _ = s.Conn().SetACL(a, zk.WorldACL(zk.PermAll), -1) })
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{a, b}, Sinks: []publish.Sink{newLedger()},
		Heartbeat: 20 * time.Millisecond, HTTPAddr: "127.0.0.1:0"})
	waitFor(t, 15*time.Second, "ready over HTTP", func() bool { return readyz(t, r).Ready })
	shown := openPage(t, r) // the header's "cannot list", as the live page updates it

	if _, err := s.Conn().SetACL(a, zk.WorldACL(zk.PermCreate|zk.PermDelete|zk.PermAdmin), -1); err != nil {
		t.Fatal(err)
	}
	acquire(t, s, a+"/new") // moves a's children: the heartbeat looks again
	var got readyBody
	waitFor(t, 15*time.Second, "/readyz naming the root that cannot be listed", func() bool {
		got = readyz(t, r)
		return !got.Ready && strings.Contains(got.ListErrors[a], "may not list") &&
			strings.Contains(strings.Join(got.NotReady, "; "), a)
	})
	if _, ok := got.ListErrors[b]; ok || strings.Contains(strings.Join(got.NotReady, "; "), b+" ") {
		t.Errorf("/readyz blames the readable root %s too: %+v", b, got)
	}
	if page := livePage(t, r); !strings.Contains(page, `<span class="bad">`+a+`</span> may not list`) {
		t.Errorf("the live page does not say %s cannot be listed:\n%s", a, page)
	}
	waitFor(t, 15*time.Second, "the open page naming the root", func() bool { return strings.Contains(shown(), a+" may not list") })
	if _, err := s.Conn().SetACL(a, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "ready again once the root can be listed", func() bool {
		got = readyz(t, r)
		return got.Ready && len(got.ListErrors) == 0
	})
	if page := livePage(t, r); !strings.Contains(page, `<div id="h-lists-row" hidden>`) {
		t.Errorf("the live page still shows a root that cannot be listed:\n%s", page)
	}
	waitFor(t, 15*time.Second, "the open page no longer naming it", func() bool { return shown() == "" })
}

// openPage opens the live page in a browser; the func returns its
// header's "cannot list" text, "" while that row is hidden.
func openPage(t *testing.T, r *running) func() string {
	t.Helper()
	ctx := browsertest.New(t, 60*time.Second)
	if err := chromedp.Run(ctx, chromedp.Navigate("http://"+r.HTTPAddr()+"/"), chromedp.WaitReady("#h-lists", chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	return func() string {
		var s string
		_ = chromedp.Run(ctx, chromedp.Evaluate(`document.getElementById("h-lists-row").hidden ? "" : document.getElementById("h-lists").textContent`, &s))
		return s
	}
}

// livePage reads the live page from the bridge's own HTTP listener.
func livePage(t *testing.T, r *running) string {
	t.Helper()
	_, raw := getFrom(t, r.HTTPAddr(), "/")
	return string(raw)
}

// getFrom fetches path from the HTTP listener at addr and returns the
// status code and body.
func getFrom(t *testing.T, addr, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw
}

// readyBody is what a probe reads of /readyz.
type readyBody struct {
	Ready      bool              `json:"ready"`
	NotReady   []string          `json:"not_ready"`
	ListErrors map[string]string `json:"list_errors"`
}

// readyz asks the bridge's own HTTP listener for /readyz.
func readyz(t *testing.T, r *running) readyBody {
	t.Helper()
	addr := r.HTTPAddr()
	if addr == "" {
		return readyBody{}
	}
	code, raw := getFrom(t, addr, "/readyz")
	var out readyBody
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("/readyz answered %d %q: %v", code, raw, err)
	}
	if out.Ready != (code == http.StatusOK) {
		t.Fatalf("/readyz answered %d with ready %v", code, out.Ready)
	}
	return out
}
