package main

import (
	"encoding/json"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestOneDiscoverRootGoneKeepsTheOthersConfirmed (found by an adversarial
// test): a bridge discovers two roots, and one of them is deleted while
// it runs. The bridge is not ready (a root given is missing), but the
// groups of the other root are still observed: their owners stay fresh.
// The heartbeats used to wait for the missing root as for one not listed
// yet, and confirmed nothing at all: who called every owner stale for as
// long as the root was gone.
func TestOneDiscoverRootGoneKeepsTheOthersConfirmed(t *testing.T) {
	zkf := zkFlags(t)
	url := natsserver.Start(t).URL()
	a, b := uniq(t)+"-a", uniq(t)+"-b"
	servers := zktest.Shared(t).Addrs()
	c, _, err := zk.Connect(servers, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	heldLock(t, servers, a+"/g")
	if _, err := c.Create(b, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	p := start(t, nil, append([]string{"bridge", "--discover", a, "--discover", b, "--heartbeat", "200ms",
		"--nats", url, "--source", "two-roots-" + newRunID()[:8], "--http", "127.0.0.1:0"}, zkf...)...)
	addr := waitMatch(t, p, regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`), 30*time.Second)
	who := func() (w whoReport) {
		out, _, _ := heraldRun(t, nil, "who", a+"/g", "--nats", url, "--json")
		_ = json.Unmarshal([]byte(out), &w)
		return w
	}
	if err := waitFor(30*time.Second, func() bool { w := who(); return w.Confirmed != nil && !w.Stale }); err != nil {
		t.Fatalf("who never called the owner of %s fresh: %+v", a+"/g", who())
	}
	if err := c.Delete(b, -1); err != nil {
		t.Fatal(err)
	}
	var noticed time.Time
	if err := waitFor(20*time.Second, func() bool {
		var st struct {
			ListErrors map[string]string `json:"list_errors"`
		}
		getJSON(t, "http://"+addr+"/readyz", &st)
		noticed = time.Now()
		return st.ListErrors[b] == "does not exist"
	}); err != nil {
		t.Fatal("the bridge never said the deleted root is missing")
	}
	var w whoReport
	if err := waitFor(10*time.Second, func() bool {
		w = who()
		return !w.Stale && w.Confirmed != nil && w.Confirmed.After(noticed)
	}); err != nil {
		t.Fatalf("with %s deleted, nothing confirms the owner of %s, whose root is there: %+v", b, a+"/g", w)
	}
}

// TestGroupBelowARootGoneWhileDownIsEnded: a group whose owner the owners
// bucket names is deleted with its whole discover root while no bridge
// runs. The bridge started again finds the root missing; it ends the
// group as gone, where it waited for the root to be listed before and
// left the owner in the bucket, called stale.
func TestGroupBelowARootGoneWhileDownIsEnded(t *testing.T) {
	zkf := zkFlags(t)
	url := natsserver.Start(t).URL()
	root := uniq(t)
	g := root + "/g"
	servers := zktest.Shared(t).Addrs()
	c, _, err := zk.Connect(servers, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, h := heldLock(t, servers, g)
	src := "root-gone-" + newRunID()[:8]
	args := append([]string{"bridge", "--discover", root, "--heartbeat", "200ms", "--nats", url, "--source", src}, zkf...)
	who := func() (w whoReport, code int) {
		out, _, code := heraldRun(t, nil, "who", g, "--nats", url, "--json")
		_ = json.Unmarshal([]byte(out), &w)
		return w, code
	}
	p := start(t, nil, args...)
	if err := waitFor(30*time.Second, func() bool { w, _ := who(); return w.Owner != nil && !w.Stale }); err != nil {
		t.Fatalf("who never named the owner of %s, fresh", g)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t, 20*time.Second)
	if err := h.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(g, -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(root, -1); err != nil {
		t.Fatal(err)
	}
	start(t, nil, args...)
	var w whoReport
	var code int
	if err := waitFor(20*time.Second, func() bool { w, code = who(); return code == 5 && w.Owner == nil }); err != nil {
		t.Fatalf("who %s, deleted with its root while the bridge was down: exit %d, %+v; want no owner, confirmed", g, code, w)
	}
}
