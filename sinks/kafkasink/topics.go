package kafkasink

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/publish"
)

// tombstoneRetention is how long a compacted topic herald creates keeps a
// tombstone after compaction reaches it (Kafka's delete.retention.ms; its
// default is a day). A bridge starting reads each group's last record in
// the owners topic to tell whether an owner may have come and gone while
// none published (LastReports); a tombstone compaction removed tells it
// nothing, so herald keeps them a week. A tombstone is a key and a header:
// a week of them costs little beside what it buys after a long outage.
const tombstoneRetention = 7 * 24 * time.Hour

// topicConfigs are the settings Connect gives the topics it creates:
// compacted (the owners and bridges topics) keeping tombstones a week, or
// deleted by age (the events topic).
func (c Config) topicConfigs(compact bool) []kafka.ConfigEntry {
	out := []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "delete"}}
	if compact {
		out = []kafka.ConfigEntry{
			{ConfigName: "cleanup.policy", ConfigValue: "compact"},
			{ConfigName: "delete.retention.ms", ConfigValue: strconv.FormatInt(tombstoneRetention.Milliseconds(), 10)},
		}
	}
	if c.MinInSyncReplicas > 0 {
		out = append(out, kafka.ConfigEntry{ConfigName: "min.insync.replicas", ConfigValue: strconv.Itoa(c.MinInSyncReplicas)})
	}
	return out
}

// ensureTopics creates the topics that are missing, checks that the owners
// topic is compacted, and waits until the cluster's metadata lists both.
func (s *Sink) ensureTopics(ctx context.Context, cl *kafka.Client) error {
	c := s.cfg
	missing, err := missingTopics(ctx, cl, c.EventsTopic, c.OwnersTopic)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		rf := c.ReplicationFactor
		if rf == 0 {
			rf = -1 // the broker's default.replication.factor
		}
		req := &kafka.CreateTopicsRequest{}
		for _, t := range missing {
			req.Topics = append(req.Topics, kafka.TopicConfig{
				Topic: t, NumPartitions: c.Partitions, ReplicationFactor: rf,
				ConfigEntries: c.topicConfigs(t == c.OwnersTopic),
			})
		}
		res, err := cl.CreateTopics(ctx, req)
		if err != nil {
			return fmt.Errorf("%w: create %v: %w", ErrTopic, missing, err)
		}
		for t, err := range res.Errors {
			if err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
				return fmt.Errorf("%w: create %s (%d partitions, replication factor %d): %w", ErrTopic, t, c.Partitions, rf, err)
			}
		}
		c.Logger.Info("kafkasink: created topics", "topics", missing, "partitions", c.Partitions, "replication", rf)
	}
	if err := checkCompacted(ctx, cl, c.OwnersTopic); err != nil {
		return err
	}
	// The bridges topic is made with the first heartbeat; one made before
	// by someone else is checked now.
	if gone, err := missingTopics(ctx, cl, c.BridgesTopic); err == nil && len(gone) == 0 {
		if err := checkBridgesCompacted(ctx, cl, c.BridgesTopic); err != nil {
			return err
		}
	}
	// A created topic reaches every broker's metadata a moment later.
	for {
		missing, err := missingTopics(ctx, cl, c.EventsTopic, c.OwnersTopic)
		if err == nil && len(missing) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: topics %v not visible in metadata yet: %w", ErrTopic, missing, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func missingTopics(ctx context.Context, cl *kafka.Client, topics ...string) ([]string, error) {
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, t := range md.Topics {
		if t.Error == nil && len(t.Partitions) > 0 {
			have[t.Name] = true
		}
	}
	var out []string
	for _, t := range topics {
		if !have[t] {
			out = append(out, t)
		}
	}
	return out, nil
}

// checkCompacted refuses an owners topic that deletes instead of compacting:
// a group whose owner has not changed for retention.ms would lose its only
// record, and readers would say it has no owner. cleanup.policy
// "compact,delete" deletes too, unless retention.ms and retention.bytes
// are -1 (never).
func checkCompacted(ctx context.Context, cl *kafka.Client, topic string) error {
	return checkKept(ctx, cl, topic, "each group's owner", "a group whose owner has not changed for that long would lose its only record, and readers would say it has no owner",
		"a quiet group's only one among them, and readers would say it has no owner")
}

// checkBridgesCompacted refuses, as checkCompacted does an owners topic, a
// bridges topic that deletes: the last heartbeat of a bridge that died
// (kill -9 writes no "stopped") is what tells readers its values are
// stale, and without it they would be read as from a bridge that sends
// none.
func checkBridgesCompacted(ctx context.Context, cl *kafka.Client, topic string) error {
	return checkKept(ctx, cl, topic, "each bridge's last heartbeat", "the last heartbeat of a bridge dead for that long would go, and readers would no longer call its values stale",
		"a dead bridge's last heartbeat among them, and readers would no longer call its values stale")
}

// checkKept refuses a topic that deletes records by age or size: keeps is
// what it must keep, byAge and bySize what is lost by each.
func checkKept(ctx context.Context, cl *kafka.Client, topic, keeps, byAge, bySize string) error {
	res, err := cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{"cleanup.policy", "retention.ms", "retention.bytes"},
	}}})
	if err != nil {
		return fmt.Errorf("%w: describe configs of %s: %w", ErrTopic, topic, err)
	}
	for _, r := range res.Resources {
		if r.Error != nil {
			return fmt.Errorf("%w: describe configs of %s: %w", ErrTopic, topic, r.Error)
		}
		policy, retention, size := "", "", ""
		for _, e := range r.ConfigEntries {
			switch e.ConfigName {
			case "cleanup.policy":
				policy = e.ConfigValue
			case "retention.ms":
				retention = e.ConfigValue
			case "retention.bytes":
				size = e.ConfigValue
			}
		}
		if policy == "" {
			continue
		}
		kinds := map[string]bool{}
		for _, k := range strings.Split(policy, ",") {
			kinds[strings.TrimSpace(k)] = true
		}
		switch {
		case !kinds["compact"]:
			return settingsError{fmt.Errorf("%w: topic %s has cleanup.policy=%s; it must be compacted to keep %s: "+
				"kafka-configs.sh --alter --entity-type topics --entity-name %s --add-config cleanup.policy=compact",
				ErrTopic, topic, policy, keeps, topic)}
		case kinds["delete"] && retention != "-1":
			return settingsError{fmt.Errorf("%w: topic %s has cleanup.policy=%s and retention.ms=%s: %s; compact only: "+
				"kafka-configs.sh --alter --entity-type topics --entity-name %s --add-config cleanup.policy=compact (or retention.ms=-1)",
				ErrTopic, topic, policy, retention, byAge, topic)}
		case kinds["delete"] && size != "" && size != "-1":
			return settingsError{fmt.Errorf("%w: topic %s has cleanup.policy=%s and retention.bytes=%s: once a partition holds that much, the oldest records go, "+
				"%s; compact only: "+
				"kafka-configs.sh --alter --entity-type topics --entity-name %s --add-config cleanup.policy=compact (or retention.bytes=-1)",
				ErrTopic, topic, policy, size, bySize, topic)}
		}
	}
	return nil
}

// settingsError is a topic whose settings no retry mends: it is ErrTopic
// and publish.ErrSinkConfig both, so a bridge says so at start at once.
type settingsError struct{ error }

func (e settingsError) Unwrap() error { return e.error }

func (settingsError) Is(target error) bool { return target == publish.ErrSinkConfig }
