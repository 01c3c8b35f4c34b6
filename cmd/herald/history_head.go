package main

import (
	"context"
	"errors"

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
// (TestHistoryWhoseOlderEventsWereDroppedSaysSo).
func (a *app) teller(ctx context.Context, sf *sourceFlags, src string, files []string, group string) func([]publish.Event) []audit.Tenure {
	var tell func([]publish.Event) []audit.Tenure
	return func(events []publish.Event) []audit.Tenure {
		if tell == nil {
			tell = audit.History
			trimmed, where, err := a.headDropped(ctx, sf, src, files, group)
			switch {
			case err != nil:
				a.log.Warn("cannot tell whether the source dropped its oldest events: a group's first stored owner may follow owners not shown, unmarked", "err", err)
			case trimmed:
				a.log.Warn(where + " no longer holds its oldest events: a group whose stored events begin with a change, not a bridge's first look, is marked GAP maybe, the owners before it dropped with their events")
				tell = audit.HistoryTrimmed
			}
		}
		return tell(events)
	}
}

// headDropped reports whether src dropped its oldest events, and names it:
// an audit log whose oldest rotated files were removed, a stream whose
// first message is not its first or with messages deleted, an events
// topic whose partition (the group's, or any) starts above offset 0.
func (a *app) headDropped(ctx context.Context, sf *sourceFlags, src string, files []string, group string) (bool, string, error) {
	switch src {
	case "":
		var errs []error
		for _, f := range files {
			gone, err := audit.OldestRemoved(f)
			if gone {
				return true, "the audit log " + f + " (its oldest rotated files were removed)", nil
			}
			errs = append(errs, err)
		}
		return false, "", errors.Join(errs...)
	case "nats":
		jsc, closeNC, err := sf.jetStream(ctx, a.log)
		if err != nil {
			return false, "", err
		}
		defer closeNC()
		st, err := jsc.Stream(ctx, jetstream.DefaultStream)
		if err != nil {
			return false, "", err
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
		trimmed, err := kafkasink.EventsTrimmed(ctx, cfg, group)
		return trimmed, "the topic " + kafkasink.DefaultEventsTopic, err
	}
}
