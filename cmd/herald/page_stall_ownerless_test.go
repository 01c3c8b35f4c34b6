package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestLivePageAfterStallCountsNoTimeWithoutOwner: a page served right after
// the bridge's process stalled, ZooKeeper not answering, shows a group last
// seen without an owner as stale, and no stretch without an owner counting
// up: an owner may have come during the freeze, as for an unknown row.
// Before, the row read stale yet kept its figure, which the page's script
// counted up second by second as if the bridge saw it.
func TestLivePageAfterStallCountsNoTimeWithoutOwner(t *testing.T) {
	p, servers, g := proxiedZK(t)
	_, h := heldLock(t, servers, g)
	if err := h.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, addr := pageBridge(t, p.Addr(), g, "30s")
	base := "http://" + addr
	if err := waitFor(20*time.Second, func() bool { return strings.Contains(httpGet(t, base+"/"), `data-state="no owner"`) }); err != nil {
		t.Fatal("the page never showed the group without an owner")
	}
	stallBridge(t, b, p)
	body := httpGet(t, base+"/")
	if !strings.Contains(body, `data-state="stale"`) {
		t.Fatalf("served after the stall, ZooKeeper not answering: the row is not stale:\n%s", body)
	}
	if td := regexp.MustCompile(`<td data-k="ownerless"[^>]*>[^<]*</td>`).FindString(body); td == "" || strings.Contains(td, "data-ns") {
		t.Errorf("a stale row (the owner may have come during the freeze) shows a stretch without an owner: %q", td)
	}
}
