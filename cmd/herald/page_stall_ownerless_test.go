package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestLivePageAfterStallCountsNoTimeWithoutOwner: a page served right after
// the bridge's process stalled, ZooKeeper not answering, shows a group last
// seen without an owner as stale, and no stretch without an owner counting
// up: an owner may have come during the freeze, as for an unknown row.
// Before, the row read stale yet kept its figure, which the page's script
// counted up second by second as if the bridge saw it.
func TestLivePageAfterStallCountsNoTimeWithoutOwner(t *testing.T) {
	zk := zktest.Shared(t)
	p, err := faultproxy.New(zk.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	g := uniq(t)
	_, h := heldLock(t, zk.Addrs(), g)
	if err := h.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, addr := pageBridge(t, p.Addr(), g, "30s")
	base := "http://" + addr
	if err := waitFor(20*time.Second, func() bool { return strings.Contains(httpGet(t, base+"/"), `data-state="no owner"`) }); err != nil {
		t.Fatal("the page never showed the group without an owner")
	}
	if err := signalPID(b.cmd.Process.Pid, sigStop); err != nil {
		t.Fatal(err)
	}
	defer signalPID(b.cmd.Process.Pid, sigCont)
	p.Blackhole(true)                   // ZooKeeper does not answer the catch-up
	time.Sleep(2500 * time.Millisecond) // stopped long enough to count as a stall
	if err := signalPID(b.cmd.Process.Pid, sigCont); err != nil {
		t.Fatal(err)
	}
	body := httpGet(t, base+"/")
	if !strings.Contains(body, `data-state="stale"`) {
		t.Fatalf("served after the stall, ZooKeeper not answering: the row is not stale:\n%s", body)
	}
	if td := regexp.MustCompile(`<td data-k="ownerless"[^>]*>[^<]*</td>`).FindString(body); td == "" || strings.Contains(td, "data-ns") {
		t.Errorf("a stale row (the owner may have come during the freeze) shows a stretch without an owner: %q", td)
	}
}
