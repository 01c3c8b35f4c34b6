package bridge_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// TestReadyzSaysASinkIsDown: with its only NATS server down, the bridge
// is not ready and /readyz names the JetStream sink, also while it has
// nothing to write; herald_sink_healthy says 0. Once the server is back
// the bridge is ready again.
func TestReadyzSaysASinkIsDown(t *testing.T) {
	addrs := zkAddrs(t)
	nsrv := natsserverStart(t)
	g := groupPath(t)
	s := session(t, addrs)
	leads(t, candidate(t, s, g, "a"))
	sink, err := jetstream.New(jetstream.Config{Conn: natssink.Options{URL: nsrv.URL(), Name: t.Name(),
		ReconnectWait: 20 * time.Millisecond, MaxReconnectWait: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, bridge.Config{Servers: addrs, Watch: []string{g}, Sinks: []publish.Sink{sink}})
	waitStatus(t, r.Bridge, 15*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 })
	waitFor(t, 10*time.Second, "the snapshot stored", func() bool { return r.Pipeline().Stats().Sinks["jetstream"].Delivered > 0 })
	series := `herald_sink_healthy{sink="jetstream"}`
	if v, ok := metricValue(t, r.Handler(), series); !ok || v != 1 {
		t.Errorf("%s = %v (found %v) on a ready bridge, want 1", series, v, ok)
	}

	nsrv.Shutdown()
	st := waitStatus(t, r.Bridge, 10*time.Second, "not ready", func(st bridge.Status) bool { return len(st.NotReady()) > 0 })
	if why := strings.Join(st.NotReady(), "; "); !strings.Contains(why, "sink jetstream is not healthy: not connected") {
		t.Errorf("not ready because %q; want the JetStream sink named, not connected", why)
	}
	code, body := get(t, r.Handler(), "/readyz")
	if code != 503 || !strings.Contains(body, "sink jetstream is not healthy") {
		t.Errorf("/readyz with NATS down: %d %s", code, body)
	}
	if v, ok := metricValue(t, r.Handler(), series); !ok || v != 0 {
		t.Errorf("%s = %v (found %v) with NATS down, want 0", series, v, ok)
	}

	nsrv.Restart(t)
	waitStatus(t, r.Bridge, 15*time.Second, "ready again", func(st bridge.Status) bool { return len(st.NotReady()) == 0 })
	if v, ok := metricValue(t, r.Handler(), series); !ok || v != 1 {
		t.Errorf("%s = %v (found %v) after NATS came back, want 1", series, v, ok)
	}
}
