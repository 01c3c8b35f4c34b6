package kafkasink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/publish"
)

// bridgesSegment is the segment.ms the sink gives the bridges topic it
// creates: heartbeats come every few seconds, and compaction only cleans
// closed segments, so an hour bounds what a reader reads to about an hour
// of heartbeats per bridge plus one record per bridge.
const bridgesSegment = time.Hour

// WriteHeartbeat implements publish.HeartbeatSink: it writes h to the
// bridges topic (Config.BridgesTopic, created on first use), keyed by
// h.Source, and returns once the brokers acknowledged it (acks=all). It
// runs beside Write, on a writer of its own.
func (s *Sink) WriteHeartbeat(ctx context.Context, h publish.Heartbeat) error {
	if err := h.Validate(); err != nil {
		return err
	}
	data, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("kafkasink: encode heartbeat: %w", err)
	}
	s.hb.Lock()
	defer s.hb.Unlock()
	if s.hb.closed {
		return ErrClosed
	}
	if s.hb.w == nil {
		if err := s.ensureBridgesTopic(ctx); err != nil {
			return err
		}
		_, tr, cfg, err := s.reach(ctx)
		if err != nil {
			return err
		}
		s.hb.w = &kafka.Writer{
			Addr: kafka.TCP(cfg.Brokers...), Transport: tr, Balancer: s.cfg.Partitioner.balancer(),
			RequiredAcks: kafka.RequireAll, BatchTimeout: s.cfg.BatchTimeout, WriteTimeout: s.cfg.WriteTimeout,
			MaxAttempts: 3, WriteBackoffMin: 50 * time.Millisecond, WriteBackoffMax: 500 * time.Millisecond,
		}
	}
	m := kafka.Message{
		Topic: s.cfg.BridgesTopic, Key: []byte(h.Source), Value: data, Time: h.Time,
		Headers: []kafka.Header{{Key: "content-type", Value: []byte("application/json")}},
	}
	if err := s.hb.w.WriteMessages(ctx, m); err != nil {
		// Start afresh next time: the topic may have been deleted, the
		// brokers may have moved.
		closeWriter(s.hb.w)
		s.hb.w = nil
		return fmt.Errorf("kafkasink: write the heartbeat of %s to %s via brokers %v: %w", h.Source, s.cfg.BridgesTopic, s.cfg.Brokers, firstError(err))
	}
	return nil
}

// ensureBridgesTopic creates the bridges topic when it is missing: one
// partition, compacted, and waits until the metadata lists it.
func (s *Sink) ensureBridgesTopic(ctx context.Context) error {
	c := s.cfg
	cl, tr, err := c.client()
	if err != nil {
		return err
	}
	defer tr.CloseIdleConnections()
	missing, err := missingTopics(ctx, cl, c.BridgesTopic)
	if err != nil {
		return classify(c, err)
	}
	if len(missing) > 0 {
		rf := c.ReplicationFactor
		if rf == 0 {
			rf = -1
		}
		cfgs := append(c.topicConfigs(true), kafka.ConfigEntry{ConfigName: "segment.ms", ConfigValue: strconv.FormatInt(bridgesSegment.Milliseconds(), 10)})
		res, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
			Topic: c.BridgesTopic, NumPartitions: 1, ReplicationFactor: rf, ConfigEntries: cfgs,
		}}})
		if err != nil {
			return fmt.Errorf("%w: create %s: %w", ErrTopic, c.BridgesTopic, err)
		}
		for t, err := range res.Errors {
			if err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
				return fmt.Errorf("%w: create %s (1 partition, replication factor %d): %w", ErrTopic, t, rf, err)
			}
		}
		c.Logger.Info("kafkasink: created the bridges' heartbeat topic", "topic", c.BridgesTopic, "replication", rf)
	}
	for {
		missing, err := missingTopics(ctx, cl, c.BridgesTopic)
		if err == nil && len(missing) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: topic %s not visible in metadata yet: %w", ErrTopic, c.BridgesTopic, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// closeWriter closes w and its transport's connections: a kafka-go
// transport keeps a pool (a metadata goroutine, a goroutine per
// connection) until told to let it go.
func closeWriter(w *kafka.Writer) {
	_ = w.Close()
	if tr, ok := w.Transport.(*kafka.Transport); ok {
		tr.CloseIdleConnections()
	}
}

// ReadBridges reads the bridges topic (Config.BridgesTopic) to its end as
// it stands: the heartbeat of every bridge that wrote one, less those a
// tombstone deleted since (publish.Bridges.Removed). Without the topic (no
// bridge has written a heartbeat) it returns an empty table. `herald
// history --kafka` reads it to tell the groups their bridges no longer
// observe.
func ReadBridges(ctx context.Context, cfg Config) (*publish.Bridges, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.warnPlainInClear()
	bridges := publish.NewBridges()
	parts, ends, err := partitionsAndEnds(ctx, cfg, cfg.BridgesTopic, "")
	if err != nil {
		if err := unlessMissing(err); err != nil {
			return nil, fmt.Errorf("kafkasink: read the bridges topic %s: %w", cfg.BridgesTopic, err)
		}
		return bridges, nil
	}
	cfg = cfg.withClusterBrokers(ctx, cfg.BridgesTopic)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // before the wait: the reads end with ctx
	reach := &bridgesReach{topic: cfg.BridgesTopic, bridges: bridges, changed: func() {}, down: map[int]error{}}
	got := func(h publish.Heartbeat) { bridges.Put(h) }
	gone := func(source string, at time.Time) { bridges.Removed(source, at) }
	select {
	case <-readBridges(ctx, cfg, parts, ends, got, gone, reach, &wg):
		return bridges, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("kafkasink: read the bridges topic %s: %w", cfg.BridgesTopic, ctx.Err())
	}
}
