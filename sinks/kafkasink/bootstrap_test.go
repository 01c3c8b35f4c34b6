package kafkasink

import (
	"context"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/kafkatest"
)

// TestConnectsThroughBrokersItLearned: a sink given one bootstrap address
// goes on connecting, and writing, while that address does not answer,
// through the brokers the cluster's metadata named, as Kafka clients do;
// it used to stop publishing until that one broker came back. The health
// probe looks the same way.
func TestConnectsThroughBrokersItLearned(t *testing.T) {
	c := kafkatest.Start(t)
	p, err := faultproxy.New(c.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	cfg := testConfig(t, c)
	cfg.Brokers = []string{p.Addr()} // the only address given
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
