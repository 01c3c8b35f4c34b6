package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestBridgeSinkSettingsExitConfig: a Kafka owners topic that compacts
// and deletes cannot keep quiet groups' owners, and no retry mends that:
// the bridge says so at once and exits 78 (EX_CONFIG), not 69 after its
// connect timeout as if the brokers were unreachable.
func TestBridgeSinkSettingsExitConfig(t *testing.T) {
	zk := zktest.Shared(t)
	kc := kafkatest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(kc.Addrs()...)}
	res, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: "herald.owners", NumPartitions: 3, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact,delete"}, {ConfigName: "retention.ms", ConfigValue: "60000"}},
	}}})
	if err != nil || res.Errors["herald.owners"] != nil {
		t.Fatalf("create the owners topic: %v %v", err, res.Errors)
	}
	began := time.Now()
	_, stderr, code := heraldRun(t, nil, "--zk", zk.ConnectString(), "--connect-timeout", "20s", "bridge", "--watch", uniq(t), "--kafka", kc.Addrs()[0])
	if code != exitConfig || !strings.Contains(stderr, "cleanup.policy=compact,delete") || !strings.Contains(stderr, "settings cannot work") {
		t.Fatalf("bridge with a compact,delete owners topic: exit %d, want %d saying why; stderr: %s", code, exitConfig, stderr)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("the refusal took %v: it was retried, though no retry mends it", d)
	}
}

// TestAuditPathNotARegularFileIsRefused: --audit naming a device or a FIFO
// is refused at once, by the bridge (exit 78) and by history, rather than
// read without end or blocked on for good.
func TestAuditPathNotARegularFileIsRefused(t *testing.T) {
	zk := zktest.Shared(t)
	fifo := filepath.Join(t.TempDir(), "audit.fifo")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := heraldRun(t, nil, "--zk", zk.ConnectString(), "bridge", "--watch", uniq(t), "--audit", "/dev/full")
	if code != exitConfig || !strings.Contains(stderr, "/dev/full is not a regular file") {
		t.Errorf("bridge --audit /dev/full: exit %d, want %d saying it is not a regular file; stderr: %s", code, exitConfig, stderr)
	}
	for _, p := range []string{"/dev/zero", fifo} {
		_, stderr, code := heraldRun(t, nil, "history", "--audit", p)
		if code == 0 || !strings.Contains(stderr, "is not a regular file") {
			t.Errorf("history --audit %s: exit %d, want a failure saying it is not a regular file; stderr: %s", p, code, stderr)
		}
	}
}

// TestAuditBelowARegularFileIsRefused: --audit below a regular file is a
// setting no retry mends: refused at once (exit 78), naming the file.
func TestAuditBelowARegularFileIsRefused(t *testing.T) {
	zk := zktest.Shared(t)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := heraldRun(t, nil, "--zk", zk.ConnectString(), "bridge", "--watch", uniq(t), "--audit", file+"/audit.log")
	if code != exitConfig || !strings.Contains(stderr, file+" is a file, not a directory") {
		t.Errorf("bridge --audit FILE/audit.log: exit %d, want %d naming the file; stderr: %s", code, exitConfig, stderr)
	}
}
