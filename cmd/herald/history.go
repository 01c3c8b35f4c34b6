package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
	"github.com/segmentio/kafka-go"
	"github.com/spf13/cobra"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/kafkasink"
	"github.com/zkherald/herald/sinks/natssink"
)

func init() { register(newHistoryCmd) }

// historyLong and historyExample are herald history --help's text, kept
// out of newHistoryCmd so that its code reads at a glance.
const (
	historyLong = `history reads every stored event (audit logs, the HERALD JetStream stream
or the herald.events Kafka topic), for one group or all, and prints the
leadership timeline: per group and term the owner, from, until, how long it
held, why it ended, and whether an owner may be missing in between (GAP).
A stretch where owners may have come and gone unseen (a bridge found the
group empty and said gap, or the bridges that wrote of the group still
send heartbeats but no longer observe it) is a row of its own: "(not
observed: owners may be missing)".

It states only what was observed. An end no bridge saw (the bridge was down
or standing by, and its next event is a snapshot showing another owner or
none) is given as the last time the owner was seen holding, marked
"until ≥" with END "not seen"; a start first seen in a snapshot is marked
"from ≤"; HELD FOR is then "≥", a lower bound. Several --audit logs (one per
bridge) are merged into one history, each event id counted once. An owner
the events leave holding is checked against the bridges' heartbeats (from
NATS or Kafka, with the owners view; from audit logs, the heartbeat each
bridge keeps beside its log, LOG.heartbeat): one no bridge confirms now (its
bridge stopped, stood by or went silent) is "open, last confirmed <time>",
not "holding".

--html FILE and --svg FILE draw the same history as a timeline, one bar per
tenure labelled with its owner and term, gaps and stretches nobody observed
drawn as such, candidates joining and leaving as marks: a file that opens in
any browser, with no server and nothing fetched.

--since and --until show the rows that overlap a window of time, each
given as an RFC 3339 time (2026-11-20T10:00:00Z) or as a duration before
now (90m, 2h, 3d: d is 24 hours). The history is still worked out from
every event (a tenure that began before the window needs them), and the
rows are shown whole, as without a window, not cut at its edges: a tenure
still open counts as reaching now. --html and --svg draw those rows over
the window's time, and only the candidates' marks inside it.

Exit codes: 0; 69 NATS or Kafka cannot be reached, or JetStream on the NATS
cluster cannot serve now (no quorum); 1 other failures (an audit log that
does not exist, or holds no herald event at all, ...); 2 usage errors.`
	historyExample = `  herald history --audit /var/lib/herald/audit.log
  herald history --audit bridge-a/audit.log --audit bridge-b/audit.log
  herald history /jobs/nightly --nats nats://localhost:4222 --json
  herald history --audit /var/lib/herald/audit.log --html timeline.html
  herald history /jobs/nightly --audit audit.log --since 2h
  herald history --audit audit.log --since 2026-11-20T10:00:00Z --until 2026-11-20T12:00:00Z`
)

func newHistoryCmd(a *app) *cobra.Command {
	var sf sourceFlags
	var files []string
	var asJSON bool
	var htmlOut, svgOut string
	var since, until string
	var heldEvents int
	cmd := &cobra.Command{
		Use:     "history [PATH] --audit FILE [--audit FILE...] | --nats URL | --kafka BROKERS",
		Short:   "Show who led when: one row per owner and term",
		Long:    historyLong,
		Example: historyExample,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErr("history takes at most one group path, got %d", len(args))
			}
			if len(args) == 1 {
				return groupArg("PATH", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			w, err := parseWindow(since, until, time.Now())
			if err != nil {
				return err
			}
			group := ""
			if len(args) == 1 {
				group = args[0]
			}
			if (htmlOut != "" || svgOut != "") && asJSON {
				return usageErr("--json with --html or --svg: --json prints the rows, the others draw them; run history once for each")
			}
			if htmlOut != "" || svgOut != "" {
				return a.timeline(cmd.Context(), &sf, files, group, heldEvents, htmlOut, svgOut, w)
			}
			return a.history(cmd.Context(), &sf, files, group, heldEvents, asJSON, w)
		},
	}
	sf.addFlags(cmd.Flags())
	cmd.Flags().StringArrayVar(&files, "audit", nil, "read the audit log FILE (and its rotated files); repeat to merge several bridges' logs")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the tenures as a JSON array (snake_case keys, held_for in seconds)")
	cmd.Flags().StringVar(&htmlOut, "html", "", "write the timeline to FILE as a self-contained HTML page (chart and table); - for standard output")
	cmd.Flags().StringVar(&svgOut, "svg", "", "write the timeline chart to FILE as SVG; - for standard output")
	cmd.Flags().StringVar(&since, "since", "", "show only the rows that reach this time or later: RFC 3339 (2026-11-20T10:00:00Z) or a duration before now (90m, 2h, 3d)")
	cmd.Flags().IntVar(&heldEvents, "events-in-memory", defaultHeldEvents, "hold at most about this many events at once: a source with more is read again for each batch of groups (slower, in less memory)")
	cmd.Flags().StringVar(&until, "until", "", "show only the rows that began by this time: RFC 3339 or a duration before now, as --since")
	return cmd
}

// writeHistory prints shown, the rows of a history of total rows that the
// window shows, as a table or as JSON. The table then starts with a line
// naming the window; JSON stays an array alone, for the programs that
// read it.
func (a *app) writeHistory(shown []audit.Tenure, total int, asJSON bool, w window) error {
	if asJSON {
		if shown == nil {
			shown = []audit.Tenure{}
		}
		return writeJSON(a.stdout, shown)
	}
	if w.set() {
		fmt.Fprintf(a.stdout, "rows overlapping %s, shown whole (times as recorded, not cut to the window)\n", w)
	}
	switch {
	case len(shown) > 0:
		return audit.WriteTable(a.stdout, shown, time.Now())
	case total > 0:
		_, err := fmt.Fprintf(a.stdout, "no leadership or lock events recorded in this window (the history has %d rows, all outside it)\n", total)
		return err
	}
	_, err := fmt.Fprintln(a.stdout, "no leadership or lock events recorded")
	return err
}

// unreadableGroups, a key of the owners view that is no group path, says
// that the view skipped values (records) it could not read as owners.
const unreadableGroups = "unreadable values"

// ownerNow is what the owners view says of a group now: its owner node
// ("" for none), and whether a bridge still confirms that. tenure is the
// owner's tenure as the view tells it (its start is the view's since),
// for the history of a group whose stored events no longer tell it.
type ownerNow struct {
	node   string
	tenure audit.Tenure
	publish.Freshness
}

// ownersNATS reads the JetStream owners bucket (group's value, or all).
func (a *app) ownersNATS(ctx context.Context, sf *sourceFlags, group string) (map[string]ownerNow, error) {
	js, closeNC, err := sf.jetStream(ctx, a.log)
	if err != nil {
		return nil, err
	}
	defer closeNC()
	now := map[string]ownerNow{}
	skipped, err := readOwners(ctx, js, group, func(u jetstream.OwnerUpdate) {
		n := ownerNow{Freshness: u.Freshness}
		if o := u.Owner; o != nil {
			n.node = o.Owner.Node
			n.tenure = audit.Tenure{Group: u.Group, Recipe: o.Recipe, Term: o.Term, Owner: o.Owner, From: o.Since, FromSeen: !o.SinceUnseen}
		}
		now[u.Group] = n
	})
	if err != nil {
		return nil, err
	}
	if skipped > 0 {
		// Some key holds a value that is no herald owner: a group the view
		// then lacks may be that one, and nothing confirms its owner.
		a.log.Warn("the owners bucket holds values that are no owner herald wrote (edited by hand?): open tenures of groups it gives nothing for are shown as not confirmed", "bucket", jetstream.DefaultBucket, "values", skipped)
		now[unreadableGroups] = ownerNow{}
	}
	return now, nil
}

// ownersKafka reads the compacted owners topic (group's record, or all).
func (a *app) ownersKafka(ctx context.Context, sf *sourceFlags, group string) (map[string]ownerNow, error) {
	cfg, err := sf.kafkaConfig(a.log)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := kafkasink.FollowOwners(wctx, cfg, group)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", kafkasink.DefaultOwnersTopic, err)
	}
	defer st.Close()
	now := map[string]ownerNow{}
	for {
		select {
		case u, ok := <-st.C():
			if !ok {
				return nil, fmt.Errorf("read %s: %v", kafkasink.DefaultOwnersTopic, st.Err())
			}
			n := ownerNow{Freshness: u.Freshness}
			if o := u.Owner(); o != nil {
				e := u.Event
				n.node = o.Node
				n.tenure = audit.Tenure{Group: u.Group, Recipe: e.Recipe, Term: e.Term, Owner: *o, From: e.Time, FromSeen: e.Type.Gains() && !e.Snapshot && !u.SinceUnseen}
			}
			now[u.Group] = n
		case <-st.Synced():
			if n := st.Skipped(); n > 0 {
				a.log.Warn("the owners topic holds records that are no owner herald wrote: open tenures of groups it gives nothing for are shown as not confirmed", "topic", kafkasink.DefaultOwnersTopic, "records", n)
				now[unreadableGroups] = ownerNow{}
			}
			return now, nil
		}
	}
}

// historyEvents reads the events of group from the stream or the events
// topic, whichever sf names, merged as audit.Merge merges the bridges'
// logs: one group's, which who's health line reads whole.
func (a *app) historyEvents(ctx context.Context, sf *sourceFlags, group string) ([]publish.Event, error) {
	src, err := sf.which()
	if err != nil {
		return nil, err
	}
	var events []publish.Event
	switch src {
	case "nats":
		events, err = a.historyNATS(ctx, sf, group)
	case "kafka":
		events, err = a.historyKafka(ctx, sf, group)
	default:
		return nil, usageErr("history needs a source: --nats URL or --kafka BROKERS")
	}
	if err != nil {
		return nil, err
	}
	return mergeBySource(events), nil
}

// mergeBySource puts the events of a stream or topic in the order
// audit.Merge gives the bridges' audit logs: the stream's order is the
// order the writes arrived, not the order of the changes (a deposed HA
// bridge may deliver older events after a newer bridge's, an HA bridge
// taking over publishes the changes it held), and History takes the order
// it is given, so a copy of an older event arriving late would end or open
// a tenure again. The events each bridge wrote (one source) are taken as
// that bridge's log, in the order it wrote them, so an event of a group
// found gone (zxid 0) is placed where its own bridge had it.
func mergeBySource(events []publish.Event) []publish.Event {
	var logs [][]publish.Event
	at := map[string]int{} // source -> its log in logs
	for _, e := range events {
		i, ok := at[e.Source]
		if !ok {
			i = len(logs)
			at[e.Source] = i
			logs = append(logs, nil)
		}
		logs[i] = append(logs[i], e)
	}
	return audit.Merge(logs...)
}

// historyStall is how long the history read waits for the stream's next
// message before it gives up.
const historyStall = 5 * time.Second

// historyNATS reads the stream from its start to its current end: until a
// message says none after it matched the filter when it was delivered
// (those stored while it reads included). One ordered consumer serves the
// whole read, its messages pulled as they come (Messages): fetching one at
// a time would make the client create a consumer per message, each of
// which a cluster's other servers learn of a moment later, so a fetch
// could find nobody to answer it. The client makes the consumer again, from
// where it was, only when it fails (a missed heartbeat, its server gone).
func (a *app) historyNATS(ctx context.Context, sf *sourceFlags, group string) ([]publish.Event, error) {
	pass, closeNC, err := a.natsPass(ctx, sf, group)
	if err != nil {
		return nil, err
	}
	defer closeNC()
	var events []publish.Event
	err = pass(ctx, func(string) bool { return true }, func(e publish.Event) { events = append(events, e) })
	return events, err
}

// natsPass connects to NATS and returns a pass over the stream (the
// events of group, or all) and a func that closes the connection. Each
// pass reads the stream from its start to its end as the pass begins.
func (a *app) natsPass(ctx context.Context, sf *sourceFlags, group string) (audit.Pass, func(), error) {
	jsc, closeNC, err := sf.jetStream(ctx, a.log)
	if err != nil {
		return nil, nil, err
	}
	cfg := js.OrderedConsumerConfig{DeliverPolicy: js.DeliverAllPolicy, MaxResetAttempts: 3, InactiveThreshold: jetstream.ReaderIdle}
	if group != "" {
		tokens, err := publish.Tokens(group)
		if err != nil {
			closeNC()
			return nil, nil, usageErr("PATH: %v", err)
		}
		cfg.FilterSubjects = []string{"herald.*." + tokens}
	}
	return a.natsPassOver(jsc, cfg, group != ""), closeNC, nil
}

// natsPassOver is the pass natsPass returns: the stream read with cfg,
// filtered to one group's subjects or not. A group's event read after a
// message deleted inside the stream since its event before says gap (see
// passDeleted).
func (a *app) natsPassOver(jsc js.JetStream, cfg js.OrderedConsumerConfig, filtered bool) audit.Pass {
	warned := map[uint64]bool{} // stream sequences warned of, once each
	return func(ctx context.Context, want func(string) bool, add func(publish.Event)) error {
		d := &passDeleted{filtered: filtered, prev: map[string]uint64{}}
		err := a.natsRead(ctx, jsc, cfg, func(msg js.Msg, seq uint64) {
			d.delivered(seq)
			if _, g, err := publish.ParseSubject(msg.Subject()); err == nil && !want(g) {
				return
			}
			e, err := natssink.Decode(&nats.Msg{Subject: msg.Subject(), Header: msg.Headers(), Data: msg.Data()})
			if err != nil {
				if !warned[seq] {
					warned[seq] = true
					a.log.Warn("skipping a message that is not a herald event", "subject", msg.Subject(), "err", err)
				}
				return
			}
			d.read(e, seq, add)
		})
		if err != nil {
			return err
		}
		return d.end(ctx, a, jsc, add)
	}
}

// natsRead reads the stream from its start to its current end, handing
// each message and its stream sequence to f: until a message says none
// after it matched the filter when it was delivered (those stored while it
// reads included). One ordered consumer serves the whole read, its
// messages pulled as they come (Messages): fetching one at a time would
// make the client create a consumer per message, each of which a
// cluster's other servers learn of a moment later, so a fetch could find
// nobody to answer it. The client makes the consumer again, from where it
// was, only when it fails (a missed heartbeat, its server gone).
func (a *app) natsRead(ctx context.Context, jsc js.JetStream, cfg js.OrderedConsumerConfig, f func(msg js.Msg, seq uint64)) error {
	c, err := jsc.OrderedConsumer(ctx, jetstream.DefaultStream, cfg)
	if err != nil {
		return streamErr(ctx, err)
	}
	defer jetstream.DropConsumer(jsc, jetstream.DefaultStream, c)
	info, err := c.Info(ctx)
	if err != nil {
		return streamErr(ctx, err)
	}
	if info.NumPending == 0 {
		return nil
	}
	if natsReadBegun != nil {
		natsReadBegun()
	}
	it, err := c.Messages(js.PullHeartbeat(time.Second))
	if err != nil {
		return streamErr(ctx, err)
	}
	defer it.Stop()
	// A read that makes no progress for historyStall is stopped (the
	// client would go on making its consumer again, for ever).
	var stalled atomic.Bool
	stall := time.AfterFunc(historyStall, func() { stalled.Store(true); it.Stop() })
	defer stall.Stop()
	defer context.AfterFunc(ctx, it.Stop)()
	for left := info.NumPending; left > 0; {
		msg, err := it.Next()
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil && stalled.Load():
			return streamErr(ctx, fmt.Errorf("no message for %v with %d left to read: %w", historyStall, left, errStalled))
		case err != nil:
			return streamErr(ctx, err)
		}
		stall.Reset(historyStall)
		md, err := msg.Metadata()
		if err != nil {
			return err
		}
		left = md.NumPending
		f(msg, md.Sequence.Stream)
	}
	return nil
}

// natsReadBegun, when set (by tests), is called once a read has counted
// the messages it reads and before it fetches any: a message deleted
// there is deleted while the pass reads.
var natsReadBegun func()

// historyKafka reads the events topic up to where it ended at the start.
func (a *app) historyKafka(ctx context.Context, sf *sourceFlags, group string) ([]publish.Event, error) {
	pass, err := a.kafkaPass(sf, group)
	if err != nil {
		return nil, err
	}
	var events []publish.Event
	err = pass(ctx, func(string) bool { return true }, func(e publish.Event) { events = append(events, e) })
	return events, err
}

// kafkaPass returns a pass over the events topic (the events of group, or
// all): each reads it from its start up to where it ended as the pass
// began. A record is passed over by its key (its group) before it is
// decoded; a record that is no herald event is warned of once, however
// many passes read it.
func (a *app) kafkaPass(sf *sourceFlags, group string) (audit.Pass, error) {
	cfg, err := sf.kafkaConfig(a.log)
	if err != nil {
		return nil, err
	}
	type at struct {
		partition int
		offset    int64
	}
	var warnMu sync.Mutex
	warned := map[at]bool{}
	skipped := kafkasink.OnSkipped(func(m kafka.Message, err error) {
		warnMu.Lock()
		defer warnMu.Unlock()
		if k := (at{m.Partition, m.Offset}); !warned[k] {
			warned[k] = true
			a.log.Warn("skipping a record that is not a herald event", "topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "err", err)
		}
	})
	return func(ctx context.Context, want func(string) bool, add func(publish.Event)) error {
		// want runs on the reader's goroutine, add on this one: the pass's
		// state is theirs in turn, and nobody's once the pass is over.
		var mu sync.Mutex
		over := false
		keys := kafkasink.Keys(func(key string) bool {
			mu.Lock()
			defer mu.Unlock()
			return !over && want(key)
		})
		a.heads().begin()
		at := kafkasink.At(a.heads().saw)
		st, err := kafkasink.Events(ctx, cfg, group, kafkasink.Unfiltered(), keys, skipped, at)
		if err != nil {
			return fmt.Errorf("read %s: %w", kafkasink.DefaultEventsTopic, err)
		}
		defer func() {
			mu.Lock()
			over = true
			mu.Unlock()
			st.Close()
		}()
		for {
			select {
			case e, ok := <-st.C():
				if !ok {
					return fmt.Errorf("read %s: %v", kafkasink.DefaultEventsTopic, st.Err())
				}
				mu.Lock()
				add(e)
				mu.Unlock()
			case <-st.Synced():
				return nil
			}
		}
	}, nil
}
