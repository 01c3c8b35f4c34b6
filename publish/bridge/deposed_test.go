package bridge_test

import (
	"testing"
	"time"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestDeposedBridgeRestatesNothing: an HA bridge that led, then lost
// leadership (cut off from ZooKeeper) and stands by, holds no groups'
// state: when the owners bucket is lost, it must not write what it knew
// when it led (an owner long gone) as current. Only the active bridge
// states the groups again, and a group without an owner stays so.
func TestDeposedBridgeRestatesNothing(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	g, ha := groupPath(t), groupPath(t)
	s := session(t, addrs)
	a := leads(t, candidate(t, s, g, "a"))
	p := proxy(t, addrs[0])
	// ha-1 looks at its store often; ha-2, the active one, does not, so
	// that nothing it writes hides what ha-1 would.
	cfg := func(name string, servers []string, check time.Duration) bridge.Config {
		return bridge.Config{Servers: servers, SessionTimeout: 3 * time.Second, Watch: []string{g}, HAPath: ha, Source: name, Sinks: []publish.Sink{jsSink(t, url)},
			PipelineOptions: []publish.Option{publish.WithStoreCheck(check)}}
	}
	b1 := start(t, cfg("ha-1", []string{p.Addr()}, 100*time.Millisecond))
	waitStatus(t, b1.Bridge, 15*time.Second, "ha-1 active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	b2 := start(t, cfg("ha-2", addrs, 0))
	waitStatus(t, b2.Bridge, 15*time.Second, "ha-2 standby and ready", func(st bridge.Status) bool {
		return st.Role == bridge.RoleStandby && len(st.NotReady()) == 0
	})
	waitFor(t, 15*time.Second, "a in the bucket", func() bool { return natsOwner(t, url, g) == "a" })

	p.Blackhole(true) // ha-1 is cut off: ha-2 takes over once ha-1's session is gone
	waitStatus(t, b2.Bridge, 30*time.Second, "ha-2 active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	p.Blackhole(false)
	waitStatus(t, b1.Bridge, 30*time.Second, "ha-1 standing by again", func(st bridge.Status) bool {
		return st.Role == bridge.RoleStandby && len(st.NotReady()) == 0
	})
	if err := a.Resign(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "no owner in the bucket", func() bool { return natsOwner(t, url, g) == "" })

	deleteBucket(t, url, false)
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if o := natsOwner(t, url, g); o != "" {
			t.Fatalf("the owners bucket, made again, names %s, who released long ago: the deposed bridge stated what it knew when it led", o)
		}
	}
}
