package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// holdingNow reports whether a timeline (its page, or the SVG alone)
// draws or lists node's tenure as holding now.
func holdingNow(body, node string) bool {
	for _, part := range regexp.MustCompile(`<tr|<title`).Split(body, -1) {
		if strings.Contains(part, node) && strings.Contains(part, "holding now") {
			return true
		}
	}
	return false
}

// TestTimelineOfUnreadableGroupHoldsNobodyNow: a group the bridge may no
// longer read (an ACL that refuses it READ) is "unreadable" on the page,
// its owner only the last one seen; its timeline must not draw that owner
// as holding now, gone as it may be. Before, it did, long after the owner
// had gone.
func TestTimelineOfUnreadableGroupHoldsNobodyNow(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zkFl := zkFlags(t)
	openTestRoot(t)
	root := uniq(t)
	g := root + "/g"
	conn := rawZK(t)
	if _, err := conn.Create(root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	holder := start(t, nil, append(zkFl, "lock", "--lock", g, "--id", "h1", "--", "sleep", "120")...)
	holder.waitOutput(t, "lock acquired", 20*time.Second)
	b := start(t, nil, append(zkFl, "bridge", "--discover", root, "--resync", "2s", "--http", "127.0.0.1:0",
		"--audit", filepath.Join(t.TempDir(), "audit.log"), "--source", "timeline-"+newRunID(),
		// Its own port: the default (127.0.0.1:4222) is taken by any other
		// bridge with an embedded NATS server, in this run or another.
		"--nats-listen", "127.0.0.1:0", "--nats-store", t.TempDir())...)
	addr := waitMatch(t, b, regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`), 30*time.Second)
	children, _, err := conn.Children(g)
	if err != nil || len(children) != 1 {
		t.Fatalf("the lock's nodes: %v, %v", children, err)
	}
	node := children[0]
	timeline := func() string { return httpGet(t, "http://"+addr+"/timeline?group="+g) }
	if err := waitFor(20*time.Second, func() bool { return holdingNow(timeline(), node) }); err != nil {
		t.Fatalf("the timeline never drew h1 holding now:\n%s", timeline())
	}
	if _, err := conn.SetACL(g, zk.DigestACL(zk.PermAll, "alice", "secret"), -1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = conn.SetACL(g, zk.WorldACL(zk.PermAll), -1) })
	if err := waitFor(20*time.Second, func() bool { return strings.Contains(httpGet(t, "http://"+addr+"/"), "state state-unreadable") }); err != nil {
		t.Fatalf("the group never unreadable on the page:\n%s", httpGet(t, "http://"+addr+"/"))
	}
	_ = signalPID(-holder.cmd.Process.Pid, syscall.SIGKILL)
	time.Sleep(3 * time.Second) // h1's session (1 s) has ended
	for _, p := range []string{"/timeline?group=" + g, "/timeline.svg?group=" + g} {
		if body := httpGet(t, "http://"+addr+p); holdingNow(body, node) {
			t.Errorf("%s of the unreadable group draws h1, gone, as holding now:\n%s", p, body)
		}
	}
}

// TestTimelineAfterStallWaitsToCatchUp: a timeline asked for while the
// bridge's process is stopped, and served as it runs again, waits (as "/"
// does) until the bridge has heard what changed meanwhile, or draws nobody
// as holding now: never the owner released during the stall. Before, it
// drew that owner holding now while "/" named the new one.
func TestTimelineAfterStallWaitsToCatchUp(t *testing.T) {
	zk := zktest.Shared(t)
	g := uniq(t)
	_, held := heldLock(t, zk.Addrs(), g)
	b, addr := pageBridge(t, zk.ConnectString(), g, "20s")
	base := "http://" + addr
	if err := waitFor(20*time.Second, func() bool { return holdingNow(httpGet(t, base+"/timeline?group="+g), held.Node()) }); err != nil {
		t.Fatal("the timeline never drew the holder holding now")
	}
	time.Sleep(time.Second) // a ping answered after the snapshot
	if err := signalPID(b.cmd.Process.Pid, sigStop); err != nil {
		t.Fatal(err)
	}
	defer signalPID(b.cmd.Process.Pid, sigCont)
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, next := heldLock(t, zk.Addrs(), g)
	time.Sleep(2500 * time.Millisecond) // stalled long enough to count as a stall
	paths := []string{"/timeline?group=" + g, "/timeline.svg?group=" + g}
	bodies := make(chan string, len(paths))
	for _, p := range paths {
		go func() {
			resp, err := http.Get(base + p)
			if err != nil {
				bodies <- p + ": " + err.Error()
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			bodies <- p + ":\n" + string(body)
		}()
	}
	time.Sleep(300 * time.Millisecond) // the requests wait in the stopped process
	if err := signalPID(b.cmd.Process.Pid, sigCont); err != nil {
		t.Fatal(err)
	}
	for range paths {
		if body := <-bodies; holdingNow(body, held.Node()) {
			t.Errorf("served as the bridge ran again, the timeline draws the holder released during the stall as holding now: %s", body)
		}
	}
	if err := waitFor(10*time.Second, func() bool { return holdingNow(httpGet(t, base+"/timeline?group="+g), next.Node()) }); err != nil {
		t.Fatal("the timeline never drew the new holder holding now")
	}
}
