package kafkasink

import (
	"context"
	"errors"

	"github.com/segmentio/kafka-go"
)

// ownersGone reports whether the brokers say the owners topic does not
// exist: someone deleted it. A topic that exists but answers otherwise
// (no leader yet while a broker restarts) is not gone, nor is one the
// brokers could not be asked about.
func (s *Sink) ownersGone(ctx context.Context, cl *kafka.Client) bool {
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{s.cfg.OwnersTopic}})
	if err != nil {
		return false
	}
	for _, t := range md.Topics {
		if t.Name == s.cfg.OwnersTopic {
			return errors.Is(t.Error, kafka.UnknownTopicOrPartition)
		}
	}
	return true
}
