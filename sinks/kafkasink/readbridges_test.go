package kafkasink

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
)

// TestReadBridges: ReadBridges gives no heartbeat, and no error, while no
// bridge has written one (no topic); then each bridge's last heartbeat,
// its scope with it, and none of a bridge whose heartbeat a tombstone
// deleted.
func TestReadBridges(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := hbConfig(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if b, err := ReadBridges(ctx, cfg); err != nil || b == nil {
		t.Fatalf("ReadBridges without the topic: %v, %v; want an empty table", b, err)
	}
	s := connected(t, cfg)
	beat(t, s, "br1", publish.BridgeActive, "")
	h := publish.Heartbeat{Source: "br1", State: publish.BridgeActive, Time: time.Now(), Interval: hbInterval,
		Scope: &publish.Scope{Watch: []string{"/other"}}}
	h.Confirmed = h.Time
	if err := s.WriteHeartbeat(ctx, h); err != nil {
		t.Fatal(err)
	}
	beat(t, s, "br2", publish.BridgeActive, "")
	// Acknowledged before ReadBridges reads: the writer's default asks
	// for no acknowledgment, and the read could come before the
	// tombstone landed (it did once in CI).
	w := &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Topic: cfg.BridgesTopic, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Key: []byte("br2")}); err != nil {
		t.Fatal(err)
	}
	b, err := ReadBridges(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := b.Get("br1")
	if !ok || got.Scope == nil || got.Scope.Covers("/g") || !got.Scope.Covers("/other") {
		t.Errorf("br1: %+v, %v; want its last heartbeat, scoped to /other", got, ok)
	}
	if got, ok := b.Get("br2"); ok {
		t.Errorf("br2, whose heartbeat was deleted: %+v", got)
	}
}
