package kafkasink

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
)

// javaMurmur2 is MurmurHash2 (32 bits) as Kafka's Java client computes it
// (org.apache.kafka.common.utils.Utils.murmur2), written here from the
// algorithm's description so the test does not trust the code under test:
// seed 0x9747b28c, h = seed ^ len; each 4-byte little-endian block k is
// mixed (k *= m; k ^= k >> 24; k *= m) into h (h *= m; h ^= k); the 1–3
// tail bytes are xored in at bits 0, 8, 16 and h *= m; then h ^= h >> 13;
// h *= m; h ^= h >> 15. m = 0x5bd1e995, arithmetic mod 2^32.
func javaMurmur2(b []byte) int32 {
	const m uint32 = 0x5bd1e995
	h := uint32(0x9747b28c) ^ uint32(len(b))
	for len(b) >= 4 {
		k := binary.LittleEndian.Uint32(b)
		k *= m
		k ^= k >> 24
		k *= m
		h = h*m ^ k
		b = b[4:]
	}
	if len(b) > 0 {
		for i := len(b) - 1; i >= 0; i-- {
			h ^= uint32(b[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// javaPartition is the Java default partitioner's choice for a keyed
// record: Utils.toPositive(murmur2(key)) % numPartitions, toPositive being
// "& 0x7fffffff". kcat's murmur2_random does the same.
func javaPartition(key []byte, n int) int {
	return int(javaMurmur2(key)&0x7fffffff) % n
}

// fnvPartition is herald's old placement, kafka-go's Hash balancer (and
// Sarama's hash partitioner): |int32(fnv1a(key)) % n|.
func fnvPartition(key []byte, n int) int {
	h := fnv.New32a()
	h.Write(key)
	p := int32(h.Sum32()) % int32(n)
	if p < 0 {
		p = -p
	}
	return int(p)
}

// sampleGroups are keys as operators name groups.
var sampleGroups = []string{
	"/jobs/nightly", "/locks/backup", "/locks/db", "/services/api/leader",
	"/controller", "/hbase/master", "/solr/overseer_elect/leader",
}

// Fixed vectors: the reference above reproduces what Kafka's own tests and
// another Java-compatible client assert, so it is Java's murmur2.
func TestJavaMurmur2Vectors(t *testing.T) {
	// Kafka's UtilsTest.testMurmur2: Utils.murmur2 as a Java int.
	for k, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		if got := javaMurmur2([]byte(k)); got != want {
			t.Errorf("reference murmur2(%q) = %d, want %d (Kafka's UtilsTest)", k, got, want)
		}
	}
	// Partitions of 1000 the Java producer's partitioner picks (asserted
	// by kafka-python's Java-compatibility test).
	for k, want := range map[string]int{"": 681, "a": 524, "ab": 434, "abc": 107, "123456789": 566, "\x00 ": 742} {
		if got := javaPartition([]byte(k), 1000); got != want {
			t.Errorf("reference partition(%q, 1000) = %d, want %d", k, got, want)
		}
		if got := Murmur2.Partition([]byte(k), 1000); got != want {
			t.Errorf("Murmur2.Partition(%q, 1000) = %d, want Java's %d", k, got, want)
		}
	}
}

// Murmur2 (the default) picks the Java client's partition for every key and
// partition count, and so does franz-go's default partitioner (a third,
// independent Java-compatible implementation); FNV1a keeps the old
// placement exactly.
func TestPartitionerMatchesJavaAndOldPlacement(t *testing.T) {
	if got := (Config{}).withDefaults().Partitioner; got != Murmur2 {
		t.Fatalf("default partitioner %q, want %q", got, Murmur2)
	}
	keys := append([]string{""}, sampleGroups...)
	for i := 0; i < 500; i++ {
		keys = append(keys, fmt.Sprintf("/svc/%d/leader", i), string(rune('a'+i%26))+fmt.Sprint(i*7919))
	}
	franz := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	for _, k := range keys {
		for _, n := range []int{1, 2, 3, 6, 7, 12, 50, 1000} {
			want := javaPartition([]byte(k), n)
			if got := Murmur2.PartitionOf(k, n); got != want {
				t.Fatalf("Murmur2.PartitionOf(%q, %d) = %d, Java's partitioner %d", k, n, got, want)
			}
			if got := (Partitioner("")).PartitionOf(k, n); got != want {
				t.Fatalf("default PartitionOf(%q, %d) = %d, Java's partitioner %d", k, n, got, want)
			}
			if f := franz.Partition(&kgo.Record{Key: []byte(k)}, n); f != want {
				t.Fatalf("franz-go puts %q on %d of %d, the reference on %d", k, f, n, want)
			}
			if got, old := FNV1a.PartitionOf(k, n), fnvPartition([]byte(k), n); got != old {
				t.Fatalf("FNV1a.PartitionOf(%q, %d) = %d, the old placement %d", k, n, got, old)
			}
		}
	}
	// Why the option exists: the schemes disagree on most sample groups.
	moved := 0
	for _, g := range sampleGroups {
		if Murmur2.PartitionOf(g, 6) != FNV1a.PartitionOf(g, 6) {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("murmur2 and fnv1a agree on every sample group; the test keys show nothing")
	}
	t.Logf("%d of %d sample groups sit on another partition of 6 under fnv1a", moved, len(sampleGroups))
}

func TestParsePartitioner(t *testing.T) {
	for in, want := range map[string]Partitioner{"": Murmur2, "murmur2": Murmur2, "MURMUR2": Murmur2, " fnv1a ": FNV1a} {
		if got, err := ParsePartitioner(in); err != nil || got != want {
			t.Errorf("ParsePartitioner(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"crc32", "murmur2_random", "random"} {
		if _, err := ParsePartitioner(bad); !errors.Is(err, ErrBadConfig) {
			t.Errorf("ParsePartitioner(%q) = %v, want ErrBadConfig", bad, err)
		}
	}
	cfg := Config{Brokers: []string{"localhost:9092"}, Partitioner: "crc32"}
	if err := cfg.Validate(); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("Validate with partitioner crc32 = %v, want ErrBadConfig", err)
	}
}

func groupEvents(groups []string) []publish.Event {
	now := time.Now().UTC().Truncate(time.Millisecond)
	var out []publish.Event
	for i, g := range groups {
		e := publish.Event{
			Type: publish.LeaderElected, Group: g, Recipe: elect.RecipeElection,
			Owner: &publish.Participant{ID: "cand-" + g, Node: "n_0000000001", Session: "0x1", Sequence: 1},
			Term:  int64(1000 + i), Zxid: int64(2000 + i), Time: now, Source: "partition-test",
		}
		out = append(out, e.WithID())
	}
	return out
}

// On a 6-partition topic every sample group's records (events and owners)
// land where the Java client would put its key, a record a Java-compatible
// producer writes for the group (a tombstone, say) lands beside them, and
// the followers of one group find its records; with FNV1a the records stay
// where herald put them before, and the followers told so find them too.
func TestSinkPartitionsLikeJava(t *testing.T) {
	c := kafkatest.Start(t)
	for _, tc := range []struct {
		name string
		p    Partitioner
		want func([]byte, int) int
	}{{"default", "", javaPartition}, {"murmur2", Murmur2, javaPartition}, {"fnv1a", FNV1a, fnvPartition}} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 6
			cfg := testConfig(t, c)
			cfg.Partitions = n
			cfg.Partitioner = tc.p
			s := connected(t, cfg)
			evs := groupEvents(sampleGroups)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := s.Write(ctx, evs); err != nil {
				t.Fatal(err)
			}
			for _, topic := range []string{cfg.EventsTopic, cfg.OwnersTopic} {
				for _, r := range kcat(t, c.Addrs(), topic, len(evs)) {
					if want := tc.want(r.Key, n); int(r.Partition) != want {
						t.Errorf("%s: %q on partition %d, want %d", topic, r.Key, r.Partition, want)
					}
				}
			}
			for i, g := range sampleGroups {
				st, err := FollowOwners(ctx, cfg, g, Unfiltered())
				if err != nil {
					t.Fatal(err)
				}
				got := collect(ctx, st, 1)
				st.Close()
				if len(got) != 1 || got[0].Event.ID != evs[i].ID {
					t.Fatalf("FollowOwners(%s) = %+v, want the owner herald wrote", g, got)
				}
				es, err := Events(ctx, cfg, g, Unfiltered())
				if err != nil {
					t.Fatal(err)
				}
				gotEv := collect(ctx, es, 1)
				es.Close()
				if len(gotEv) != 1 || gotEv[0].ID != evs[i].ID {
					t.Fatalf("Events(%s) = %v, want the event herald wrote", g, eventIDs(gotEv))
				}
			}
			if tc.p.orDefault() == Murmur2 {
				// A Java-compatible producer (franz-go's default
				// partitioner) writes a tombstone for a group.
				cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic(cfg.OwnersTopic))
				if err != nil {
					t.Fatal(err)
				}
				r, err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(sampleGroups[0])}).First()
				cl.Close()
				if err != nil {
					t.Fatal(err)
				}
				if want := javaPartition([]byte(sampleGroups[0]), n); int(r.Partition) != want {
					t.Errorf("the Java-compatible tombstone for %s went to %d, herald's records to %d", sampleGroups[0], r.Partition, want)
				}
			}
		})
	}
}
