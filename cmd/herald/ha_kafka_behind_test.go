package main

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
	"github.com/zkherald/herald/sinks/audit"
)

// TestKilledActiveAheadInNATSBothTell: the active HA bridge has written
// three changes to NATS but not to Kafka (down) when it is killed with
// SIGKILL. The standby takes over, and once Kafka is back, history read
// from Kafka tells the same tenures as from NATS: the standby published
// what it held to both, and the stream dropped its copies by id.
func TestKilledActiveAheadInNATSBothTell(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zktest.Shared(t)
	kc := kafkatest.Start(t)
	brokers, url := kc.Addrs()[0], natsserver.Start(t).URL()
	g, ha := uniq(t), uniq(t)+"-ha"
	httpAddr := regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`)
	sfx := "-" + newRunID()[:8] // sources are claimed across the shared ZooKeeper
	bridge := func(name string) (*proc, string) {
		p := start(t, nil, "bridge", "--zk", zk.ConnectString(), "--session-timeout", "2s", "--connect-timeout", "10s",
			"--watch", g, "--ha", ha, "--source", name+sfx, "--kafka", brokers, "--nats", url, "--http", "127.0.0.1:0")
		return p, waitMatch(t, p, httpAddr, 30*time.Second)
	}
	l, h := heldLock(t, zk.Addrs(), g)
	a, aAddr := bridge("bridge-a")
	waitRole(t, aAddr, "active")
	_, bAddr := bridge("bridge-b")
	waitRole(t, bAddr, "standby")
	if err := waitFor(20*time.Second, func() bool { return len(ownerRecords(t, kc.Addrs(), g)) > 0 }); err != nil {
		t.Fatal("bridge-a never wrote the first owner to Kafka")
	}
	kc.Stop() // what follows reaches NATS only
	ctx := context.Background()
	tenures := func(src ...string) []audit.Tenure { return historyJSON(t, append([]string{g}, src...)...) }
	for n := 2; n <= 3; n++ { // each tenure seen in NATS before the next
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		var err error
		if h, err = l.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		if err := waitFor(20*time.Second, func() bool { ts := tenures("--nats", url); return len(ts) == n && ts[n-1].Open() }); err != nil {
			t.Fatalf("NATS never held tenure %d: %+v", n, tenures("--nats", url))
		}
	}
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(20*time.Second, func() bool {
		var st struct {
			Role string `json:"role"`
		}
		getJSON(t, "http://"+bAddr+"/readyz", &st) // 503 while Kafka is down
		return st.Role == "active"
	}); err != nil {
		t.Fatal("bridge-b never took over")
	}
	kc.Restart(t)
	want := tenures("--nats", url)
	var got []audit.Tenure
	if err := waitFor(30*time.Second, func() bool {
		got = tenures("--kafka", brokers)
		return len(got) == len(want) && got[len(got)-1].Open()
	}); err != nil {
		t.Fatalf("history from Kafka %+v, from NATS %+v: not the same tenures", got, want)
	}
	for i := range want {
		if got[i].Owner.Node != want[i].Owner.Node || got[i].Open() != want[i].Open() {
			t.Errorf("tenure %d: from Kafka %+v, from NATS %+v", i, got[i], want[i])
		}
	}
}
