package main

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLivePageAfterStallWaitsOnceWithOpenStreams: right after its process
// stalled, with ZooKeeper not answering, a bridge serves its page within
// the catch-up's bound (2 s), stale, however many pages are open. Before,
// each open page's stream took its own turn of up to 2 s at the catch-up,
// one after the other, and a page load waited behind them all (about 2 s
// per open page).
func TestLivePageAfterStallWaitsOnceWithOpenStreams(t *testing.T) {
	p, servers, g := proxiedZK(t)
	heldLock(t, servers, g)
	b, addr := pageBridge(t, p.Addr(), g, "30s")
	base := "http://" + addr
	if err := waitFor(20*time.Second, func() bool { return strings.Contains(httpGet(t, base+"/"), `data-state="held"`) }); err != nil {
		t.Fatal("the page never showed the lock held")
	}
	// Six open pages' streams.
	for range 6 {
		resp, err := http.Get(base + "/events")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = resp.Body.Close() })
		go func() {
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
			}
		}()
	}
	stallBridge(t, b, p)
	time.Sleep(1500 * time.Millisecond) // the streams are at the catch-up
	began := time.Now()
	body := httpGet(t, base+"/")
	took := time.Since(began)
	if !strings.Contains(body, `data-state="stale"`) {
		t.Errorf("served after the stall, ZooKeeper not answering: the row is not stale:\n%s", body)
	}
	if took > 5*time.Second {
		t.Errorf("the page took %v after the stall, over the catch-up's bound of 2 s", took.Round(time.Millisecond))
	}
	t.Logf("the page came after %v", took.Round(time.Millisecond))
}
