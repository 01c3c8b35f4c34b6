package integration_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/kafkasink"
	"github.com/zkherald/herald/sinks/natssink"
)

const latencyChanges = 200

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// BenchmarkChangeToNATS: a ZooKeeper leadership change to a NATS subscriber
// receiving its leader.elected event, through a bridge (observer, pipeline,
// NATS core sink).
func BenchmarkChangeToNATS(b *testing.B) {
	zkc := benchCluster(b)
	ns := natsserver.Start(b)
	for range b.N {
		group := groupPath(b, "nats")
		sink, err := natssink.New(natssink.Options{URL: ns.URL()})
		if err != nil {
			b.Fatal(err)
		}
		nc, err := nats.Connect(ns.URL())
		if err != nil {
			b.Fatal(err)
		}
		got := make(chan arrival, 1024)
		subj, _ := publish.Subject(publish.LeaderElected, group)
		sub, err := nc.Subscribe(subj, func(m *nats.Msg) {
			at := time.Now()
			if e, err := natssink.Decode(m); err == nil {
				got <- arrival{e, at}
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			b.Fatal(err)
		}
		leaders := alternate(b, zkc.Addrs(), group, 2)
		startBridge(b, benchSessionTB(b, zkc.Addrs()), []string{group}, sink)
		lat := changeLatency(b, leaders, got, latencyChanges)
		_ = sub.Unsubscribe()
		nc.Close()
		p50, p99 := percentile(lat, 50), percentile(lat, 99)
		b.ReportMetric(msf(p50), "p50-ms")
		b.ReportMetric(msf(p99), "p99-ms")
		table(benchOut(), fmt.Sprintf("ZooKeeper change -> NATS subscriber, %d changes (resign call to leader.elected received)", latencyChanges), []row{
			{what: "latency p50", herald: ms(p50), target: "< 1 ms", verdict: met(p50 < time.Millisecond)},
			{what: "latency p99", herald: ms(p99), target: "< 5 ms", verdict: met(p99 < 5*time.Millisecond)},
		})
	}
}

// BenchmarkChangeToKafka: a ZooKeeper leadership change to a kafka-go
// reader receiving its leader.elected record from herald.events.
func BenchmarkChangeToKafka(b *testing.B) {
	zkc := benchCluster(b)
	kc := kafkatest.Start(b)
	for i := range b.N {
		group := groupPath(b, "kafka")
		cfg := kafkasink.Config{Brokers: kc.Addrs(), Partitions: 1,
			EventsTopic: fmt.Sprintf("bench.events.%d", i), OwnersTopic: fmt.Sprintf("bench.owners.%d", i), Logger: quietLog}
		sink, err := kafkasink.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		leaders := alternate(b, zkc.Addrs(), group, 2)
		startBridge(b, benchSessionTB(b, zkc.Addrs()), []string{group}, sink)
		got := make(chan arrival, 1024)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			readKafka(ctx, kc.Addrs(), cfg.EventsTopic, got)
		}()
		lat := changeLatency(b, leaders, got, latencyChanges)
		cancel()
		<-done
		p50, p99 := percentile(lat, 50), percentile(lat, 99)
		b.ReportMetric(msf(p50), "p50-ms")
		b.ReportMetric(msf(p99), "p99-ms")
		table(benchOut(), fmt.Sprintf("ZooKeeper change -> Kafka consumer (kfake, kafka-go reader), %d changes", latencyChanges), []row{
			{what: "latency p50", herald: ms(p50)},
			{what: "latency p99", herald: ms(p99), target: "< 25 ms", verdict: met(p99 < 25*time.Millisecond)},
		})
	}
}

// readKafka reads topic's only partition from the start until ctx ends,
// sending every decodable event with its arrival time.
func readKafka(ctx context.Context, brokers []string, topic string, got chan<- arrival) {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: 0,
		MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 5 * time.Millisecond, ReadBackoffMin: time.Millisecond, ReadBackoffMax: 5 * time.Millisecond})
	defer r.Close()
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				return
			}
			continue // the topic may not exist yet
		}
		at := time.Now()
		e, err := publish.Decode(publish.KafkaPrefix, func(k string) (string, bool) {
			for _, h := range m.Headers {
				if h.Key == k {
					return string(h.Value), true
				}
			}
			return "", false
		}, m.Value)
		if err == nil {
			select {
			case got <- arrival{e, at}:
			case <-ctx.Done():
				return
			}
		}
	}
}
