package main

import (
	"context"
	"errors"
	"fmt"
	"sort"

	js "github.com/nats-io/nats.go/jetstream"
	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// teller returns what tells a batch's events as tenures, asking the
// source once, at the first batch (it answered the read by then), whether
// it dropped its oldest events: then audit.HistoryTrimmed, which marks
// GAP maybe a group whose first stored event is a change, not a bridge's
// first look. history told such a group's first stored owner as following
// nobody, its start seen, when retention had dropped the owners before it
// (TestHistoryWhoseOlderEventsWereDroppedSaysSo). A source that cannot
// tell (a Kafka reader not allowed to describe the topic's configs) is
// told as one that did: unmarked, such an owner read as following nobody
// in the rows, and only standard error said it might not
// (TestHistoryFromACompactingTopicAReaderCannotDescribeMarksAGap).
//
// The stream of every group is read once more for each batch when it
// holds more events than history holds at once, and each batch is asked
// of again, from its own pass's read (streamRead, no request): a group of
// a later batch whose first look was deleted, or dropped by a limit,
// after the first batch's pass began with a change, its first owner told
// as following nobody, unmarked
// (TestHistoryInPassesMarksAGroupWhoseLookWasDeletedBetweenThem). The
// events topic too: each batch marks the groups whose first records were
// dropped since the first pass (kafkaHeads). Audit logs too: each batch
// opens them again, and marks the groups whose first event lay in a file
// removed since
// (TestHistoryInBatchesMarksAGroupWhoseOldestFileWasRemovedBetweenThem,
// TestHistoryInBatchesDoesNotMarkAGroupTheRemovedFileHeldNothingOf).
func (a *app) teller(ctx context.Context, sf *sourceFlags, src string, files []string, group string) func([]publish.Event) []audit.Tenure {
	asked, trimmed, lostWarned := false, false, false
	return func(events []publish.Event) []audit.Tenure {
		switch {
		case !asked:
			asked = true
			dropped, where, err := a.headDropped(ctx, sf, src, files, group)
			switch {
			case err != nil:
				a.log.Warn("cannot tell whether the source dropped its oldest events: a group whose stored events begin with a change, not a bridge's first look, is marked GAP maybe, as if it had", "err", err)
				trimmed = true
			case dropped:
				a.warnDropped(where)
				trimmed = true
			}
		case !trimmed && src == "nats" && group == "" && a.streamRead.dropped():
			a.warnDropped("the stream " + jetstream.DefaultStream)
			trimmed = true
		}
		// Each batch of the events topic is read by a pass of its own:
		// records dropped since the first pass (retention, a deletion)
		// left a batch's groups without their first records, unmarked.
		// Marked are the groups whose first records the batch's pass no
		// longer found (kafkaHeads); asked instead whether the
		// partitions dropped records, every later group whose events
		// begin with a change was GAP maybe, those the records held
		// nothing of too. Audit logs the same way: each batch's read
		// marks the groups whose first event lay in a rotated file
		// removed since the logs were counted (audit.ReadBatches).
		if src == "kafka" && a.markKafkaLost(events) && !lostWarned {
			lostWarned = true
			a.log.Warn("the topic " + kafkasink.DefaultEventsTopic + " dropped records between history's reads of it: the groups whose first records they were are marked GAP maybe, the owners before dropped with their events")
		}
		if trimmed {
			return audit.HistoryTrimmed(events)
		}
		return audit.History(events)
	}
}

// warnDropped warns that the source named where dropped its oldest events.
func (a *app) warnDropped(where string) {
	a.log.Warn(where + " no longer holds its oldest events: a group whose stored events begin with a change, not a bridge's first look, is marked GAP maybe, the owners before it dropped with their events")
}

// headDropped reports whether src dropped its oldest events, and names it:
// an audit log whose oldest rotated files were removed, a stream whose
// first message is not its first or with messages deleted, an events
// topic whose partition (the group's, or any) began above offset 0 when
// history's first pass read it (kafkaHeads.trimmed).
func (a *app) headDropped(ctx context.Context, sf *sourceFlags, src string, files []string, group string) (bool, string, error) {
	switch src {
	case "":
		return a.auditHeadDropped(files)
	case "nats":
		if r := a.streamRead; group == "" && r != nil {
			return r.dropped(), "the stream " + jetstream.DefaultStream, nil
		}
		jsc, closeNC, err := sf.jetStream(ctx, a.log)
		if err != nil {
			return false, "", err
		}
		defer closeNC()
		// A group's events read alone tell nothing of the others': the
		// stream's count and last sequence do, with no stream info. Not
		// whole may be a message stored between their reads (a live
		// bridge's heartbeats), which stream info, where allowed, tells
		// from a loss: taken for one, it marked a live stream's groups
		// GAP maybe.
		whole, werr := streamWhole(ctx, jsc)
		if werr == nil && whole {
			return false, "the stream " + jetstream.DefaultStream, nil
		}
		st, err := jsc.Stream(ctx, jetstream.DefaultStream)
		switch {
		case err != nil && werr == nil:
			return true, "the stream " + jetstream.DefaultStream, nil // not whole, each time asked
		case err != nil:
			return false, "", fmt.Errorf("%w (history of all groups tells from its read of the whole stream)", err)
		}
		// Messages deleted inside it (a purge of one group's subject, a
		// message removed by hand) count too: the first stays first.
		info := st.CachedInfo()
		return info.State.FirstSeq > 1 || info.State.NumDeleted > 0, "the stream " + jetstream.DefaultStream, nil
	default:
		cfg, err := sf.kafkaConfig(a.log)
		if err != nil {
			return false, "", err
		}
		starts, err := kafkasink.EventsStarts(ctx, cfg, group)
		if err != nil {
			return false, "", err
		}
		if a.heads().trimmed(starts) {
			return true, "the topic " + kafkasink.DefaultEventsTopic, nil
		}
		// Compaction drops a group's older records with the partition
		// still starting at offset 0. A reader not allowed to describe
		// the topic's configs (an ACL granting Read only) is told so at
		// every run: unchecked, the history read as whole with nothing
		// said, when compaction may have dropped owners.
		compacts, err := kafkasink.EventsCompacted(ctx, cfg)
		if err != nil {
			return false, "", describeRefused(cfg, err)
		}
		return compacts, "the topic " + kafkasink.DefaultEventsTopic + " (its cleanup.policy compacts: it keeps each group's latest record only)", nil
	}
}

// auditHeadDropped reports whether an audit log of files had its oldest
// rotated files removed, and names it.
func (a *app) auditHeadDropped(files []string) (bool, string, error) {
	if reads := a.auditCounted; reads != nil {
		// Told from the files the first read opened: asked now, a
		// file it read whole but retention removed since (during
		// the read, or the first batch's) was said removed, and
		// every group whose events begin with a change GAP maybe,
		// those it held nothing of too. A later batch marks the
		// groups whose first event lay in it (audit.ReadBatches).
		for _, r := range reads {
			if r.OldestRemoved {
				return true, "the audit log " + r.Path + " (its oldest rotated files were removed)", nil
			}
		}
		return false, "", nil
	}
	var errs []error
	for _, f := range files {
		gone, err := audit.OldestRemoved(f)
		if gone {
			return true, "the audit log " + f + " (its oldest rotated files were removed)", nil
		}
		errs = append(errs, err)
	}
	return false, "", errors.Join(errs...)
}

// describeRefused says that whether the events topic compacts could not
// be checked, and, when the brokers refused the reader, what grant lets
// it check.
func describeRefused(cfg kafkasink.Config, err error) error {
	err = fmt.Errorf("could not check whether the topic %s compacts (its cleanup.policy), which would drop a group's older records: %w",
		kafkasink.DefaultEventsTopic, err)
	if !errors.Is(err, kafka.TopicAuthorizationFailed) && !errors.Is(err, kafka.ClusterAuthorizationFailed) {
		return err
	}
	who := "the reader's principal"
	if cfg.SASL != nil && cfg.SASL.User != "" {
		who = "User:" + cfg.SASL.User
	}
	return fmt.Errorf("%w; grant DescribeConfigs on it: kafka-acls.sh --add --allow-principal %s --operation DescribeConfigs --topic %s",
		err, who, kafkasink.DefaultEventsTopic)
}

// streamDeleted lists the sequences of the messages deleted inside the
// stream (nats stream rmm, a purge of one subject), sorted; nil when none
// were (see passDeleted).
func streamDeleted(ctx context.Context, jsc js.JetStream) ([]uint64, error) {
	if whole, err := streamWhole(ctx, jsc); err == nil && whole {
		return nil, nil // no stream info needed, which a reader may be denied
	}
	st, err := jsc.Stream(ctx, jetstream.DefaultStream)
	if err != nil || st.CachedInfo().State.NumDeleted == 0 {
		return nil, err
	}
	info, err := st.Info(ctx, js.WithDeletedDetails(true))
	if err != nil {
		return nil, err
	}
	deleted := info.State.Deleted
	sort.Slice(deleted, func(i, j int) bool { return deleted[i] < deleted[j] })
	return deleted, nil
}

// deletedBetween reports whether a sequence of deleted lies strictly
// between from and to.
func deletedBetween(deleted []uint64, from, to uint64) bool {
	i := sort.Search(len(deleted), func(i int) bool { return deleted[i] > from })
	return i < len(deleted) && deleted[i] < to
}
