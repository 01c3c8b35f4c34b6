package jetstream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/zkherald/herald/publish"
)

// WriteHeartbeat implements publish.HeartbeatSink: it puts h in the bridges
// bucket (Config.BridgesBucket, created on first use) under
// publish.BridgeKey(h.Source). It is written directly, beside the
// pipeline's Writes, and may run concurrently with them.
func (s *Sink) WriteHeartbeat(ctx context.Context, h publish.Heartbeat) error {
	if err := h.Validate(); err != nil {
		return err
	}
	data, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("jetstream: encode heartbeat: %w", err)
	}
	s.mu.Lock()
	js, kv, closed := s.js, s.bridges, s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case js == nil:
		return fmt.Errorf("jetstream: heartbeat before connect: %w", publish.ErrReconnect)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.AckTimeout)
		defer cancel()
	}
	if kv == nil {
		if kv, err = ensureBucket(ctx, js, s.cfg.bridgesBucketConfig()); err != nil {
			return s.cfg.Conn.Scrub(err)
		}
		s.mu.Lock()
		if s.js == js {
			s.bridges = kv
		}
		s.mu.Unlock()
	}
	if _, err := kv.Put(ctx, publish.BridgeKey(h.Source), data); err != nil {
		// The bucket may have been deleted: open it again next time.
		s.mu.Lock()
		if s.bridges == kv {
			s.bridges = nil
		}
		s.mu.Unlock()
		return s.cfg.Conn.Scrub(fmt.Errorf("jetstream: write the heartbeat of %s to %s: %w", h.Source, s.cfg.BridgesBucket, err))
	}
	return nil
}
