package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestBridgeLostSessionLeavesWithTheServersBack: an active HA bridge whose
// ZooKeeper was gone for longer than the session timeout presumes its
// session lost and opens a new one. The servers may not have expired the
// old one (an ensemble without a quorum expires nothing, and a server
// restarted, as here, gives every session it kept a whole timeout again),
// and its HA node then held the bridges' election for that timeout after
// ZooKeeper was back, the standby and the bridge's own new candidate
// waiting behind it: the bridge closed the old session at once, ending
// the connection that would have closed it as soon as the servers
// answered. It now lets that connection close it.
func TestBridgeLostSessionLeavesWithTheServersBack(t *testing.T) {
	zkc := zktest.ForTest(t, zkserver.Config{Nodes: 1})
	addrs := zkc.Addrs()
	g, ha := groupPath(t), groupPath(t)
	const timeout = 4 * time.Second
	r := start(t, bridge.Config{Servers: addrs, Watch: []string{g}, HAPath: ha, Source: "lingering", SessionTimeout: timeout,
		Sinks: []publish.Sink{&recordSink{}}})
	waitStatus(t, r.Bridge, 15*time.Second, "active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	look := session(t, addrs)
	kids, _, err := look.Conn().Children(ha)
	if err != nil || len(kids) != 1 {
		t.Fatalf("the HA path holds %v (%v), want the bridge's one candidate", kids, err)
	}
	old := ha + "/" + kids[0]

	m := zkc.Member(0)
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r.Bridge, 4*timeout, "the session presumed lost", func(st bridge.Status) bool { return st.Role != bridge.RoleActive })
	time.Sleep(timeout + time.Second) // a whole timeout without an answer: presumed lost, a new session tried
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	look = session(t, addrs)
	waitFor(t, 3*timeout, "the old session's HA node gone", func() bool {
		there, _, err := look.Conn().Exists(old)
		return err == nil && !there
	})
	if took := time.Since(back); took > timeout*2/3 {
		t.Errorf("the HA node of the bridge's lost session went %v after ZooKeeper was back: as late as the servers' own expiry (%v), not closed by the bridge", took.Round(time.Millisecond), timeout)
	} else {
		t.Logf("the HA node of the bridge's lost session went %v after ZooKeeper was back", took.Round(time.Millisecond))
	}
	waitStatus(t, r.Bridge, 3*timeout, "active again", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
}
