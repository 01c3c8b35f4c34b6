package natsserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/internal/natsserver"
)

// TestClusterR3SurvivesOneNode: a 3-node cluster takes an R3 stream; with
// the stream's leader stopped, the other two elect a new one and accept
// publishes; the stopped node comes back on its port and store and catches
// up.
func TestClusterR3SurvivesOneNode(t *testing.T) {
	c := natsserver.StartCluster(t, 3)
	if got := len(c.URLs()); got != 3 {
		t.Fatalf("%d URLs, want 3", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := nats.Connect(c.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "R3", Subjects: []string{"r3.>"}, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	if r := st.CachedInfo().Config.Replicas; r != 3 {
		t.Fatalf("stream has %d replicas, want 3", r)
	}
	publish := func(what string) {
		t.Helper()
		for {
			actx, acancel := context.WithTimeout(ctx, time.Second)
			_, err := js.Publish(actx, "r3.a", []byte(what), jetstream.WithMsgID(what))
			acancel()
			if err == nil {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("publish %s: %v", what, err)
			}
		}
	}
	publish("before")
	var leader int
	waitFor(t, ctx, "a stream leader", func() bool { leader = c.StreamLeader("R3"); return leader >= 0 })
	c.Stop(leader)
	publish("during")
	waitFor(t, ctx, "a new stream leader", func() bool { l := c.StreamLeader("R3"); return l >= 0 && l != leader })
	c.Restart(t, leader)
	publish("after")
	// Every node's own copy, the restarted one's too once it has caught
	// up, holds the three messages and nothing else.
	waitFor(t, ctx, "every node to hold 3 messages", func() bool {
		for i := range c.Size() {
			if st, ok := c.LocalStream(i, "R3"); !ok || st.Msgs != 3 || st.LastSeq != 3 {
				return false
			}
		}
		return true
	})
}

func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not ordering
	}
}
