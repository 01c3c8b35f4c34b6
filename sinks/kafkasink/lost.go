package kafkasink

import (
	"context"
	"errors"

	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/publish"
)

var _ publish.StoreChecker = (*Sink)(nil)

// ownersGone reports whether the brokers say the owners topic does not
// exist: someone deleted it. A topic that exists but answers otherwise
// (no leader yet while a broker restarts) is not gone, nor is one the
// brokers could not be asked about.
func (s *Sink) ownersGone(ctx context.Context, cl *kafka.Client) bool {
	md, err := s.ownersMetadata(ctx, cl)
	return err == nil && missing(md)
}

// missing reports whether a topic's metadata (nil: not listed) says it
// does not exist.
func missing(md *kafka.Topic) bool {
	return md == nil || errors.Is(md.Error, kafka.UnknownTopicOrPartition)
}

// ownersMetadata is the owners topic's metadata (nil when the brokers do
// not list it).
func (s *Sink) ownersMetadata(ctx context.Context, cl *kafka.Client) (*kafka.Topic, error) {
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{s.cfg.OwnersTopic}})
	if err != nil {
		return nil, err
	}
	for i := range md.Topics {
		if md.Topics[i].Name == s.cfg.OwnersTopic {
			return &md.Topics[i], nil
		}
	}
	return nil, nil
}

// StoreGone implements publish.StoreChecker: whether the owners topic,
// made sure of by an earlier Connect, is missing now, or was made again
// since the last look. Kafka does not tell this client one incarnation of
// a topic from the next, but a partition's end offset only grows
// (compaction and retention remove records from the front, never move
// the end back), so an end found lower than at the last look belongs to a
// topic made again. The sink then counts the topic lost, and its next
// Connect makes it again if it is missing. A look that fails reports
// false.
func (s *Sink) StoreGone(ctx context.Context) bool {
	s.mu.Lock()
	ensured := s.ensured
	s.mu.Unlock()
	if !ensured {
		return false // not made sure of yet: Connect looks itself
	}
	cl, tr, err := s.cfg.client()
	if err != nil {
		return false
	}
	defer tr.CloseIdleConnections()
	md, err := s.ownersMetadata(ctx, cl)
	if err != nil {
		return false
	}
	if !missing(md) && !s.endsFell(ctx, cl, md) {
		return false
	}
	s.mu.Lock()
	s.lost = true
	s.mu.Unlock()
	s.forgetEnds()
	return true
}

// endsFell reads the end offset of every partition of the owners topic
// (md) and reports whether one is lower than at the last look (see
// swapEnds). A read that fails reports false.
func (s *Sink) endsFell(ctx context.Context, cl *kafka.Client, md *kafka.Topic) bool {
	ends, err := s.readEnds(ctx, cl, md)
	if err != nil {
		return false
	}
	return s.swapEnds(ends)
}

// swapEnds remembers ends as the owners topic's end offsets and reports
// whether one is lower than the last ones remembered.
func (s *Sink) swapEnds(ends map[int]int64) (fell bool) {
	s.endsMu.Lock()
	defer s.endsMu.Unlock()
	for p, end := range ends {
		if was, ok := s.ends[p]; ok && end < was {
			fell = true
		}
	}
	s.ends = ends
	return fell
}

// readEnds reads the end offset of every partition of the owners topic
// (md).
func (s *Sink) readEnds(ctx context.Context, cl *kafka.Client, md *kafka.Topic) (map[int]int64, error) {
	parts := make([]int, len(md.Partitions))
	for i, p := range md.Partitions {
		parts[i] = p.ID
	}
	return lastOffsets(ctx, cl, s.cfg.OwnersTopic, parts...)
}

// lastOffsets reads where each of topic's partitions parts ends.
func lastOffsets(ctx context.Context, cl *kafka.Client, topic string, parts ...int) (map[int]int64, error) {
	req := make([]kafka.OffsetRequest, len(parts))
	for i, p := range parts {
		req[i] = kafka.LastOffsetOf(p)
	}
	res, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: req}})
	if err != nil {
		return nil, err
	}
	ends := map[int]int64{}
	for _, p := range res.Topics[topic] {
		if p.Error != nil {
			return nil, p.Error
		}
		ends[p.Partition] = p.LastOffset
	}
	return ends, nil
}

// noteEnds reads the owners topic's end offsets as Connect leaves it and
// reports whether one fell since the last look: a topic made again
// between StoreGone's looks. Called with s.mu held; a read that fails
// reports false and leaves StoreGone's next look to learn them.
func (s *Sink) noteEnds(ctx context.Context, cl *kafka.Client) bool {
	md, err := s.ownersMetadata(ctx, cl)
	if err != nil || md == nil {
		return false
	}
	ends, err := s.readEnds(ctx, cl, md)
	return err == nil && s.swapEnds(ends)
}

// forgetEnds drops the end offsets remembered: the topic is new.
func (s *Sink) forgetEnds() {
	s.endsMu.Lock()
	s.ends = nil
	s.endsMu.Unlock()
}

// wrote is the writer's Completion: the end offsets our own writes to the
// owners topic reached, so that a topic made again right after a write,
// before any look, is told by its ends falling too. It runs on the
// writer's goroutines while Write holds s.mu, so it takes endsMu alone.
func (s *Sink) wrote(msgs []kafka.Message, err error) {
	if err != nil {
		return
	}
	s.endsMu.Lock()
	defer s.endsMu.Unlock()
	for _, m := range msgs {
		if m.Topic != s.cfg.OwnersTopic {
			continue
		}
		if s.ends == nil {
			s.ends = map[int]int64{}
		}
		s.ends[m.Partition] = max(s.ends[m.Partition], m.Offset+1)
	}
}
