package kafkasink

import (
	"fmt"
	"strings"

	"github.com/segmentio/kafka-go"
)

// Partitioner says how a record's key (a group path, or a bridge's source)
// picks its partition. The writer and the readers that look for one group
// (FollowOwners, Events with a group) use the same one, so set it alike on
// both sides.
type Partitioner string

const (
	// Murmur2 is the Java client's default partitioner, kcat's
	// (librdkafka's) murmur2_random and franz-go's default:
	// (murmur2(key) & 0x7fffffff) % partitions. A Java, Kafka Streams,
	// ksqlDB or kcat producer writing a group's key (a tombstone, say)
	// lands on herald's partition for it, and co-partitioned joins line
	// up. The default.
	Murmur2 Partitioner = "murmur2"
	// FNV1a is what herald used before murmur2 became the default:
	// kafka-go's Hash balancer (Sarama's hash partitioner),
	// |int32(fnv1a(key)) % partitions|. Keep it for topics with more than
	// one partition that an older herald wrote, until they are migrated.
	FNV1a Partitioner = "fnv1a"
)

// DefaultPartitioner is used when Config.Partitioner is empty.
const DefaultPartitioner = Murmur2

// ParsePartitioner reads a partitioner's name ("murmur2" or "fnv1a",
// case-insensitive; empty means the default).
func ParsePartitioner(s string) (Partitioner, error) {
	switch p := Partitioner(strings.ToLower(strings.TrimSpace(s))); p {
	case "":
		return DefaultPartitioner, nil
	case Murmur2, FNV1a:
		return p, nil
	}
	return "", fmt.Errorf("%w: partitioner %q: use %s (Java's default) or %s (herald's placement before murmur2 became the default)",
		ErrBadConfig, s, Murmur2, FNV1a)
}

func (p Partitioner) orDefault() Partitioner {
	if p == "" {
		return DefaultPartitioner
	}
	return p
}

// balancer is the kafka-go balancer the writers use; Partition goes
// through it too, so what is written and what is looked for agree.
func (p Partitioner) balancer() kafka.Balancer {
	if p.orDefault() == FNV1a {
		return &kafka.Hash{}
	}
	// Consistent: a nil key hashes like an empty one instead of going to
	// a random partition. herald never writes a nil key; this keeps the
	// mapping a pure function of the key.
	return kafka.Murmur2Balancer{Consistent: true}
}

// Partition returns the partition, in [0, partitions), that key goes to
// on a topic with that many partitions (numbered 0 to partitions-1, as
// Kafka numbers them). It panics if partitions < 1.
func (p Partitioner) Partition(key []byte, partitions int) int {
	if partitions < 1 {
		panic("kafkasink: Partition of a topic without partitions")
	}
	if key == nil {
		key = []byte{}
	}
	all := make([]int, partitions)
	for i := range all {
		all[i] = i
	}
	return p.balancer().Balance(kafka.Message{Key: key}, all...)
}

// PartitionOf returns the partition of group's records (its key is the
// group path) on a topic with that many partitions.
func (p Partitioner) PartitionOf(group string, partitions int) int {
	return p.Partition(key(group), partitions)
}
