package kafkasink

import (
	"context"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
)

// TestConnectsThroughBrokersItLearned: a sink given one bootstrap address
// goes on connecting, and writing, while that address does not answer,
// through the brokers the cluster's metadata named, as Kafka clients do;
// it used to stop publishing until that one broker came back. The health
// probe looks the same way.
func TestConnectsThroughBrokersItLearned(t *testing.T) {
	_, p, cfg := behindProxy(t)
	s := connected(t, cfg)
	writeEvents(t, s, gainFrom("/bootstrap/g", "a", 100, "b1"))

	p.Refuse(true) // the bootstrap address is gone; the broker is not
	p.Cut()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Connect(ctx); err != nil {
		t.Fatalf("connect with the bootstrap address gone and the broker up: %v", err)
	}
	writeEvents(t, s, gainFrom("/bootstrap/g", "b", 200, "b1"))
	if _, err := s.ask(ctx, nil); err != nil {
		t.Fatalf("health probe with the bootstrap address gone and the broker up: %v", err)
	}
}

// behindProxy starts a cluster and gives a config only one address, a
// proxy to its first broker, which the test can take away.
func behindProxy(t *testing.T) (*kafkatest.Cluster, *faultproxy.Proxy, Config) {
	t.Helper()
	c := kafkatest.Start(t)
	p, err := faultproxy.New(c.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	cfg := testConfig(t, c)
	cfg.Brokers = []string{p.Addr()} // the only address given
	return c, p, cfg
}

// TestFollowerReadsOnThroughBrokersItLearned: a follower given one
// bootstrap address that stops answering finds its partitions' leaders
// through the brokers the cluster named, as the sink does, and goes on
// delivering after the brokers restart.
func TestFollowerReadsOnThroughBrokersItLearned(t *testing.T) {
	c, p, cfg := behindProxy(t)
	s := connected(t, cfg)
	const g = "/bootstrap/follow"
	writeEvents(t, s, gainFrom(g, "a", 100, "b1"))
	st := followOwners(t, cfg, g)
	if u := nextOwner(t, st, 20*time.Second); u.Owner() == nil || u.Owner().Node != "a" {
		t.Fatalf("first update %+v, want a", u)
	}
	p.Refuse(true)
	p.Cut()
	c.Stop()
	c.Restart(t)
	writeAgain(t, s, []publish.Event{gainFrom(g, "b", 200, "b1")})
	for deadline := time.Now().Add(40 * time.Second); ; {
		u := nextOwner(t, st, time.Until(deadline))
		if u.Owner() != nil && u.Owner().Node == "b" {
			return
		}
	}
}
