package main

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestTakeoverEndsAGroupGoneMeanwhile: a discovered group is deleted with
// its owner while Kafka is down; the active bridge cannot write the end,
// and dies after the standby's replay window has passed. The standby takes
// over: the group's held events were dropped for age, and the group is no
// longer observed, so no observer is left to read it afresh. It publishes
// the group's end itself (dated by the root's last child change, as a
// gap): the owners topic's last record of the group is that end, by the
// new active bridge, not the gone owner, which its heartbeats would
// otherwise confirm for ever.
func TestTakeoverEndsAGroupGoneMeanwhile(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zks := zktest.Shared(t)
	kc := kafkatest.Start(t)
	brokers := kc.Addrs()[0]
	root, ha := uniq(t), uniq(t)+"-ha"
	g := root + "/g"
	httpAddr := regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`)
	// Sources are claimed across the shared ZooKeeper: parallel tests name theirs apart.
	sfx := "-" + newRunID()[:8]
	bridge := func(name string) (*proc, string) {
		p := start(t, nil, "bridge", "--zk", zks.ConnectString(), "--session-timeout", "2s", "--connect-timeout", "10s",
			"--discover", root, "--ha", ha, "--ha-replay", "3s", "--source", name+sfx, "--kafka", brokers, "--http", "127.0.0.1:0")
		return p, waitMatch(t, p, httpAddr, 30*time.Second)
	}
	_, h := heldLock(t, zks.Addrs(), g)
	a, aAddr := bridge("bridge-a")
	waitRole(t, aAddr, "active")
	_, bAddr := bridge("bridge-b")
	waitRole(t, bAddr, "standby")
	if err := waitFor(20*time.Second, func() bool { return len(ownerRecords(t, kc.Addrs(), g)) > 0 }); err != nil {
		t.Fatal("bridge-a never wrote the first owner")
	}

	kc.Stop()
	if err := h.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	c, _, err := zk.Connect(zks.Addrs(), 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var deleteAll func(p string)
	deleteAll = func(p string) {
		ch, _, _ := c.Children(p)
		for _, x := range ch {
			deleteAll(p + "/" + x)
		}
		if err := c.Delete(p, -1); err != nil {
			t.Fatalf("delete %s: %v", p, err)
		}
	}
	deleteAll(g)                // an operator's deleteall
	time.Sleep(5 * time.Second) // past bridge-b's replay window
	_ = a.cmd.Process.Kill()
	kc.Restart(t)
	role := func(addr string) string {
		var st struct {
			Role string `json:"role"`
		}
		getJSON(t, "http://"+addr+"/readyz", &st)
		return st.Role
	}
	if err := waitFor(20*time.Second, func() bool { return role(bAddr) == "active" }); err != nil {
		t.Fatal("bridge-b never took over")
	}
	ended := func() bool {
		r := ownerRecords(t, kc.Addrs(), g)
		return len(r) > 0 && r[len(r)-1] == "bridge-b"+sfx+" lock.released"
	}
	if err := waitFor(20*time.Second, ended); err != nil {
		t.Fatalf("the group is gone from ZooKeeper, yet the owners topic's last record of it is not its end by bridge-b: %v", ownerRecords(t, kc.Addrs(), g))
	}
}
