package bridge_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// TestReadyzSaysKafkaIsDownWhileIdle: with its only broker stopped and
// nothing to write (the snapshot is stored, no group changes), the bridge
// is not ready, /readyz names the Kafka sink, not connected, and
// herald_sink_healthy{sink="kafka"} reads 0, with no write having failed:
// the sink's probe tells. Once the broker is back on its port the bridge is
// ready again.
func TestReadyzSaysKafkaIsDownWhileIdle(t *testing.T) {
	addrs := zkAddrs(t)
	kc := kafkatest.Start(t)
	g := groupPath(t)
	s := session(t, addrs)
	leads(t, candidate(t, s, g, "a"))
	topic := strings.ReplaceAll(strings.Trim(g, "/"), "/", ".")
	sink, err := kafkasink.New(kafkasink.Config{
		Brokers: kc.Addrs(), EventsTopic: topic + ".events", OwnersTopic: topic + ".owners", BridgesTopic: topic + ".bridges",
		Partitions: 1, ReplicationFactor: 1, WriteTimeout: 3 * time.Second, ProbeInterval: 200 * time.Millisecond, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, bridge.Config{Servers: addrs, Watch: []string{g}, Sinks: []publish.Sink{sink}})
	waitStatus(t, r.Bridge, 20*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 })
	waitFor(t, 10*time.Second, "the snapshot stored", func() bool { return r.Pipeline().Stats().Sinks["kafka"].Delivered > 0 })
	series := `herald_sink_healthy{sink="kafka"}`
	if v, ok := metricValue(t, r.Handler(), series); !ok || v != 1 {
		t.Errorf("%s = %v (found %v) on a ready bridge, want 1", series, v, ok)
	}

	kc.Stop()
	st := waitStatus(t, r.Bridge, 10*time.Second, "not ready", func(st bridge.Status) bool { return len(st.NotReady()) > 0 })
	if why := strings.Join(st.NotReady(), "; "); !strings.Contains(why, "sink kafka is not healthy: not connected") {
		t.Errorf("not ready because %q; want the Kafka sink named, not connected", why)
	}
	code, body := get(t, r.Handler(), "/readyz")
	if code != 503 || !strings.Contains(body, "sink kafka is not healthy") {
		t.Errorf("/readyz with Kafka down: %d %s", code, body)
	}
	if v, ok := metricValue(t, r.Handler(), series); !ok || v != 0 {
		t.Errorf("%s = %v (found %v) with Kafka down, want 0", series, v, ok)
	}
	if ks := r.Pipeline().Stats().Sinks["kafka"]; ks.Errors != 0 || ks.Backlog != 0 {
		t.Errorf("sink stats %+v: want no write tried, nothing waiting (idle)", ks)
	}

	kc.Restart(t)
	waitStatus(t, r.Bridge, 15*time.Second, "ready again", func(st bridge.Status) bool { return len(st.NotReady()) == 0 })
	if v, ok := metricValue(t, r.Handler(), series); !ok || v != 1 {
		t.Errorf("%s = %v (found %v) after Kafka came back, want 1", series, v, ok)
	}
}
