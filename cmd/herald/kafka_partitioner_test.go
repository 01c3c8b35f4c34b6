package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// ownersReader is a franz-go client reading herald.owners from the start.
func ownersReader(t *testing.T, addrs []string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(kafkasink.DefaultOwnersTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// ownersPartition reads herald.owners with franz-go until it finds group's
// record and returns its partition.
func ownersPartition(t *testing.T, addrs []string, group string) int32 {
	t.Helper()
	cl := ownersReader(t, addrs)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	p := int32(-1)
	for p < 0 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if string(r.Key) == group {
				p = r.Partition
			}
		})
	}
	if p < 0 {
		t.Fatalf("no record of %s in %s", group, kafkasink.DefaultOwnersTopic)
	}
	return p
}

// herald bridge --kafka-partitioner picks where a group's records go (murmur2,
// as Java, by default; fnv1a as herald did before), and who/history with the
// same --kafka-partitioner find them, while the other scheme looks on
// another partition.
func TestKafkaPartitionerFlag(t *testing.T) {
	zk := zkFlags(t)
	const n = 6
	for _, tc := range []struct {
		name   string
		flag   []string // given to the bridge and the readers
		scheme kafkasink.Partitioner
		other  []string // the readers' flag for the other scheme
	}{
		{"default", nil, kafkasink.Murmur2, []string{"--kafka-partitioner", "fnv1a"}},
		{"fnv1a", []string{"--kafka-partitioner", "fnv1a"}, kafkasink.FNV1a, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := kafkatest.Start(t)
			kafka := strings.Join(kc.Addrs(), ",")
			// A group the two schemes put on different partitions.
			var group string
			for i := 0; ; i++ {
				group = fmt.Sprintf("%s-%d", uniq(t), i)
				if kafkasink.Murmur2.PartitionOf(group, n) != kafkasink.FNV1a.PartitionOf(group, n) {
					break
				}
			}
			h := campaign(t, zkSession(t), group, "worker-1")
			defer h.Resign(context.Background())
			bridge := start(t, nil, append(append([]string{"bridge", "--watch", group, "--kafka", kafka,
				"--kafka-partitions", fmt.Sprint(n), "--drain-timeout", "5s"}, tc.flag...), zk...)...)
			src := append([]string{"--kafka", kafka}, tc.flag...)
			var r whoReport
			if err := waitFor(30*time.Second, func() bool {
				out, _, code := heraldRun(t, nil, append([]string{"who", group, "--json"}, src...)...)
				return code == 0 && json.Unmarshal([]byte(out), &r) == nil && r.Owner != nil
			}); err != nil {
				t.Fatalf("who %v never named an owner (last %+v); bridge:\n%s", src, r, bridge.out)
			}
			if r.Owner.ID != "worker-1" {
				t.Fatalf("who %v: %+v, want worker-1", src, r)
			}
			if got, want := ownersPartition(t, kc.Addrs(), group), tc.scheme.PartitionOf(group, n); int(got) != want {
				t.Fatalf("the owner of %s is on partition %d, want %s's %d", group, got, tc.scheme, want)
			}
			out, stderr, code := heraldRun(t, nil, append([]string{"history", group}, src...)...)
			if code != 0 || !strings.Contains(out, "worker-1") {
				t.Fatalf("history %v: exit %d:\n%s%s", src, code, out, stderr)
			}
			other := append([]string{"--kafka", kafka}, tc.other...)
			if _, stderr, code := heraldRun(t, nil, append([]string{"who", group}, other...)...); code != exitNoOwner {
				t.Fatalf("who %v (the other scheme) exit %d, want %d: it should look on another partition; stderr: %s", other, code, exitNoOwner, stderr)
			}
		})
	}
	for _, args := range [][]string{
		{"who", "/a", "--kafka", "127.0.0.1:1", "--kafka-partitioner", "crc32"},
		{"history", "/a", "--kafka", "127.0.0.1:1", "--kafka-partitioner", "crc32"},
		{"tail", "/a", "--kafka", "127.0.0.1:1", "--kafka-partitioner", "crc32"},
		{"bridge", "--watch", "/a", "--kafka", "127.0.0.1:1", "--kafka-partitioner", "crc32"},
	} {
		if _, stderr, code := heraldRun(t, nil, args...); code != exitUsage || !strings.Contains(stderr, "--kafka-partitioner") {
			t.Errorf("herald %v: exit %d, want %d naming --kafka-partitioner; stderr: %s", args, code, exitUsage, stderr)
		}
	}
}
