package integration_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/kafkasink"
	"github.com/zkherald/herald/sinks/natssink"
)

const (
	throughputEvents = 20000
	throughputGroups = 100
	memoryGroups     = 10000
)

// BenchmarkSinkThroughput: events per second through the pipeline to each
// sink alone, 20,000 leader.elected events over 100 groups.
func BenchmarkSinkThroughput(b *testing.B) {
	for range b.N {
		var rows []row
		for _, mk := range []func(testing.TB) publish.Sink{
			func(t testing.TB) publish.Sink {
				s, err := natssink.New(natssink.Options{URL: natsserver.Start(t).URL()})
				must(t, err)
				return s
			},
			func(t testing.TB) publish.Sink {
				s, err := jetstream.New(jetstream.Config{Conn: natssink.Options{URL: natsserver.Start(t).URL()}})
				must(t, err)
				return s
			},
			func(t testing.TB) publish.Sink {
				s, err := kafkasink.New(kafkasink.Config{Brokers: kafkatest.Start(t).Addrs(), Logger: quietLog})
				must(t, err)
				return s
			},
			func(t testing.TB) publish.Sink {
				s, err := audit.New(filepath.Join(t.TempDir(), "audit.log"))
				must(t, err)
				return s
			},
		} {
			sink := mk(b)
			rate := pushThrough(b, sink)
			b.ReportMetric(rate, sink.Name()+"-events/s")
			rows = append(rows, row{what: sink.Name() + " events/s", herald: fmt.Sprintf("%.0f", rate)})
		}
		table(benchOut(), fmt.Sprintf("Pipeline throughput, %d events over %d groups, one sink at a time", throughputEvents, throughputGroups), rows)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// pushThrough publishes throughputEvents events to a pipeline over sink and
// returns events per second until the sink acknowledged them all.
func pushThrough(b *testing.B, sink publish.Sink) float64 {
	b.Helper()
	p, err := publish.New([]publish.Sink{sink}, publish.WithBacklog(throughputEvents+1), publish.WithBatchSize(publish.DefaultBatchSize))
	must(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = p.Close(cctx)
		ccancel()
		cancel()
		<-done
	}()
	// Connect before timing, with one event.
	warm := benchEvent("/bench/warm", 1)
	must(b, p.Publish(ctx, warm))
	waitDelivered(b, p, sink.Name(), 1)
	events := make([]publish.Event, throughputEvents)
	for i := range events {
		events[i] = benchEvent(fmt.Sprintf("/bench/tp/g%03d", i%throughputGroups), int64(i+2))
	}
	start := time.Now()
	for i := 0; i < len(events); i += 1000 {
		must(b, p.Publish(ctx, events[i:i+1000]...))
	}
	waitDelivered(b, p, sink.Name(), throughputEvents+1)
	return throughputEvents / time.Since(start).Seconds()
}

func benchEvent(group string, term int64) publish.Event {
	node := "candidate-" + elect.FormatSequence(int32(term))
	return publish.Event{Type: publish.LeaderElected, Group: group, Recipe: elect.RecipeElection,
		Owner: &publish.Participant{ID: fmt.Sprint("c", term), Node: node, Sequence: int32(term)},
		Term:  term, Zxid: term, Time: time.Now().UTC(), Source: "bench"}.WithID()
}

func waitDelivered(b *testing.B, p *publish.Pipeline, sink string, n int64) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for p.Stats().Sinks[sink].Delivered < n {
		if time.Now().After(deadline) {
			b.Fatalf("%s: %d of %d events delivered after 5 minutes (%s)", sink, p.Stats().Sinks[sink].Delivered, n, p.Stats().Sinks[sink].LastError)
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkObserverMemory: heap per observed group with 10,000 groups (one
// owner each) watched by one bridge: observers on one session feeding a
// pipeline with the NATS sink.
func BenchmarkObserverMemory(b *testing.B) {
	zkc := benchCluster(b)
	ns := natsserver.Start(b)
	for range b.N {
		root := groupPath(b, "memory")
		groups := makeGroups(b, zkc.Addrs(), root, memoryGroups)
		s := benchSessionTB(b, zkc.Addrs())
		before := heapInuse()
		sink, err := natssink.New(natssink.Options{URL: ns.URL()})
		must(b, err)
		start := time.Now()
		br := startBridge(b, s, groups, sink)
		waitDelivered(b, br.p, sink.Name(), memoryGroups) // one snapshot per group
		ready := time.Since(start)
		after := heapInuse()
		per := float64(after-before) / memoryGroups
		b.ReportMetric(per, "heap-bytes/group")
		table(benchOut(), fmt.Sprintf("Memory, %d groups observed by one bridge (HeapInuse delta after GC)", memoryGroups), []row{
			{what: "heap per observed group", herald: fmt.Sprintf("%.0f bytes", per)},
			{what: "all snapshots delivered after", herald: ms(ready)},
		})
		br.stop()
	}
}

func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// makeGroups creates n groups under root, each with one candidate node
// owned by a session that lives as long as the benchmark.
func makeGroups(b *testing.B, addrs []string, root string, n int) []string {
	b.Helper()
	c := rawConn(b, addrs, benchSessionTimeout)
	mkdirs(b, c, root)
	groups := make([]string, n)
	var ops []any
	flush := func() {
		if _, err := c.Multi(ops...); err != nil {
			b.Fatalf("create groups: %v", err)
		}
		ops = ops[:0]
	}
	for i := range groups {
		groups[i] = fmt.Sprintf("%s/g%05d", root, i)
		ops = append(ops,
			&zk.CreateRequest{Path: groups[i], Acl: zk.WorldACL(zk.PermAll)},
			&zk.CreateRequest{Path: groups[i] + "/candidate-", Data: []byte("owner"), Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral | zk.FlagSequence})
		if len(ops) >= 400 {
			flush()
		}
	}
	if len(ops) > 0 {
		flush()
	}
	return groups
}
