package main

import (
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
	"github.com/zkherald/herald/publish/bridge"
)

// TestWhoGroupThatLostReadIsNotConfirmed: a bridge observes a lock whose
// owner holds; someone takes READ off the group's ACL, then the owner
// releases. ZooKeeper sends no watch event to a session that may not
// READ the node, so the bridge hears nothing of the release, and only its
// check of the group (--resync) finds it unreadable. With one group,
// who --nats named the released owner as confirmed until the next check,
// 5 minutes by default (found by an adversarial test); the checks now come
// every 30 s where they cost ZooKeeper little.
func TestWhoGroupThatLostReadIsNotConfirmed(t *testing.T) {
	t.Parallel() // waits for the bridge's check, not the CPU
	g, url := uniq(t), natsserver.Start(t).URL()
	zkc := zktest.Shared(t)
	br := start(t, nil, "bridge", "--zk", zkc.ConnectString(), "--session-timeout", "4s", "--watch", g, "--nats", url,
		"--heartbeat", "200ms", "--source", "br", "--drain-timeout", "5s")
	owner := start(t, nil, "--zk", zkc.ConnectString(), "lock", "--lock", g, "--id", "owner-A", "--", "sleep", "60")
	waitWhoNATS(t, g, url, "owner-A", br)
	c := rawZK(t)
	if _, err := c.SetACL(g, zk.WorldACL(zk.PermCreate|zk.PermWrite|zk.PermDelete|zk.PermAdmin), -1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.SetACL(g, zk.WorldACL(zk.PermAll), -1) })
	_ = owner.cmd.Process.Signal(syscall.SIGTERM)
	owner.wait(t, 20*time.Second)
	released := time.Now()
	// ZooKeeper tells the bridge nothing of the release (it may not READ
	// the group): its check of the group, once per round, finds it.
	var out, stderr string
	confirmed := func() bool {
		out, stderr, _ = heraldRun(t, nil, "who", g, "--json", "--nats", url)
		var r whoReport
		return json.Unmarshal([]byte(out), &r) == nil && r.Owner != nil && r.Owner.ID == "owner-A" && !r.Stale
	}
	if err := waitFor(bridge.ResyncFloor+15*time.Second, func() bool { return !confirmed() }); err != nil {
		t.Errorf("who --nats %v after owner-A released, the group unreadable to the bridge: owner-A, confirmed:\n%s%s\nbridge:\n%s",
			time.Since(released).Round(time.Millisecond), out, stderr, br.out)
	}
}
