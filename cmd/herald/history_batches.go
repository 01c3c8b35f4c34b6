package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// defaultHeldEvents is how many events `herald history` holds at once by
// default: some 200 MB of a log, read, merged and told as tenures. A
// year's log of a busy fleet holds millions of events, and so may a stream
// or topic kept without a limit; holding them all would take gigabytes.
const defaultHeldEvents = 200_000

// history prints the history a source tells (audit logs, the stream or
// the events topic), of group ("" for all), holding about heldEvents
// events at a time: the source is read a batch of groups at a time
// (eachBatch), and each batch is merged, told as tenures, confirmed and
// cut to the window before the next is read. Only the rows shown are
// kept, and past heldEvents of them, in a file.
func (a *app) history(ctx context.Context, sf *sourceFlags, files []string, group string, heldEvents int, asJSON bool, w window) error {
	src, err := historySource(sf, files, heldEvents)
	if err != nil {
		return err
	}
	h := a.newHistoryOut(ctx, sf, src, files, group, a.ownersOnce(ctx, sf, src, group), heldEvents, asJSON, w)
	defer h.rows.close()
	if err := a.eachBatch(ctx, sf, src, files, group, heldEvents, h.batch); err != nil {
		return unreachableExit(err)
	}
	if err := h.unheard(); err != nil {
		return unreachableExit(err)
	}
	if h.rows.spool == nil {
		err = a.writeHistory(h.rows.held, h.total, asJSON, w)
	} else {
		if w.set() && !asJSON {
			fmt.Fprintf(a.stdout, "rows overlapping %s, shown whole (times as recorded, not cut to the window)\n", w)
		}
		_, err = h.rows.spool.WriteTo(a.stdout)
	}
	if note := ownersNote(src, h.owners); err == nil && note != "" && !asJSON {
		_, err = fmt.Fprintln(a.stdout, note)
	}
	return err
}

// ownersNote is the note a table ends with when the owners view of the
// stream or topic (src) could not be read whole, "" when it could (or
// for audit logs: owners nil). A warning on standard error alone is easy
// to miss, and the rows then lack what the view would have told: an
// owner whose stored events were all dropped is not shown, and open
// tenures are not confirmed.
func ownersNote(src string, owners func() (map[string]ownerNow, error)) string {
	if owners == nil {
		return ""
	}
	where, who := "bucket "+jetstream.DefaultBucket, "herald who GROUP --nats URL"
	if src == "kafka" {
		where, who = "topic "+kafkasink.DefaultOwnersTopic, "herald who GROUP --kafka BROKERS"
	}
	view, err := owners()
	if _, bad := view[unreadableGroups]; !bad && err == nil {
		return ""
	}
	lacks := "an owner whose stored events were all dropped is missing from these rows, and open tenures are not confirmed"
	if err != nil {
		return fmt.Sprintf("note: the owners view (%s) could not be read (%v): %s; run history again once %s can read it", where, err, lacks, who)
	}
	return fmt.Sprintf("note: the owners view (%s) holds values that are no owner herald wrote (put by hand?): for the groups they stand for, %s; "+
		"delete or correct those values (%s says whether a group's is one) and run history again", where, lacks, who)
}

// newHistoryOut is what history tells the batches of src with, owners
// reading the owners view (ownersOnce).
func (a *app) newHistoryOut(ctx context.Context, sf *sourceFlags, src string, files []string, group string, owners func() (map[string]ownerNow, error), heldEvents int, asJSON bool, w window) *historyOut {
	return &historyOut{w: w, rows: historyRows{hold: heldEvents, asJSON: asJSON}, judge: a.judge(ctx, files, owners),
		scope: a.scopeMarks(ctx, sf, src, files, owners), owners: owners, seen: map[string]bool{},
		reread: a.rereader(ctx, sf, src, group), tell: a.teller(ctx, sf, src, files, group), log: a.log}
}

// historySource checks history's source flags and says which source they
// name: "" for audit logs (files), "nats" or "kafka".
func historySource(sf *sourceFlags, files []string, heldEvents int) (string, error) {
	src, err := sf.which()
	switch {
	case err != nil:
		return "", err
	case len(files) > 0 && src != "":
		return "", usageErr("give one source: --audit, --nats or --kafka")
	case len(files) == 0 && src == "":
		return "", usageErr("history needs a source: --audit FILE, --nats URL or --kafka BROKERS")
	case heldEvents < 1:
		return "", usageErr("--events-in-memory %d: give how many events to hold at once, 1 or more (default %d)", heldEvents, defaultHeldEvents)
	}
	return src, nil
}

// eachBatch reads the events of group ("" for all) from src (audit logs
// in files, the stream or the events topic) a batch of groups at a time
// (audit.ReadBatches, audit.InPasses), holding about heldEvents, and
// hands fn each batch merged: every event of a group in one batch, the
// batches in the order of their groups.
func (a *app) eachBatch(ctx context.Context, sf *sourceFlags, src string, files []string, group string, heldEvents int, fn func(events []publish.Event) error) error {
	var pass audit.Pass
	switch src {
	case "":
		return a.readAudit(ctx, files, group, heldEvents, fn)
	case "nats":
		p, closeNC, err := a.natsPass(ctx, sf, group)
		if err != nil {
			return err
		}
		defer closeNC()
		pass = p
	case "kafka":
		// This read's first pass is the one its batches are told against
		// (kafkaHeads), not one of an earlier read's.
		a.kafkaHeads = &kafkaHeads{}
		p, err := a.kafkaPass(sf, group)
		if err != nil {
			return err
		}
		pass = p
	}
	return audit.InPasses(ctx, heldEvents, pass, func(events []publish.Event) error {
		if historyBatchRead != nil {
			historyBatchRead()
		}
		return fn(mergeBySource(events))
	})
}

// judge returns what marks the open tenures that nothing confirms: from
// audit logs, the heartbeats kept beside them (read at the first batch
// with an open tenure); from the stream or topic, the owners view
// (owners, read once, then too). Cancelled (Ctrl-C) while it reads the
// files beside the logs for that, it says so: those reads went on to
// their end, a log with a hole read whole once more.
func (a *app) judge(ctx context.Context, files []string, owners func() (map[string]ownerNow, error)) func([]publish.Event, []audit.Tenure) error {
	if owners == nil {
		now := time.Now()
		var bridges *publish.Bridges
		var unread, ended func(string) time.Time
		return func(events []publish.Event, ts []audit.Tenure) error {
			if bridges == nil {
				if auditJudgeBegun != nil {
					auditJudgeBegun()
				}
				var err error
				if unread, err = a.unreadUntil(ctx, files); err != nil {
					return err
				}
				if ended, err = a.endedBeforeHoles(ctx, files); err != nil {
					return err
				}
				bridges = a.auditBridges(files)
			}
			judgeAudit(bridges, events, ts, now, unread, ended)
			return nil
		}
	}
	warned := false
	return func(_ []publish.Event, ts []audit.Tenure) error {
		view, err := owners()
		if err != nil && !warned {
			warned = true
			// Nothing confirms them then: "holding" would present as
			// current what may have ended since (the owners store
			// deleted while the bridge was down, say).
			a.log.Warn("could not read the owners view: the open tenures are shown as not confirmed", "err", err)
		}
		judgeOwners(view, err, ts)
		return nil
	}
}

// auditJudgeBegun, when set (by tests), is called as judge begins the
// reads of the files beside the audit logs, once the events were read.
var auditJudgeBegun func()

// ownersOnce returns what reads the owners view of the stream or topic
// (src "nats" or "kafka"; group's, or all) when first asked, and gives
// what it read every time after; nil for audit logs (src ""), which
// keep no owners view.
func (a *app) ownersOnce(ctx context.Context, sf *sourceFlags, src, group string) func() (map[string]ownerNow, error) {
	if src == "" {
		return nil
	}
	var view map[string]ownerNow
	var err error
	read := false
	return func() (map[string]ownerNow, error) {
		if !read {
			read = true
			if src == "nats" {
				view, err = a.ownersNATS(ctx, sf, group)
			} else {
				view, err = a.ownersKafka(ctx, sf, group)
			}
		}
		return view, err
	}
}

// judgeOwners marks the open tenures of ts that the owners view (view, or
// none when it could not be read: err) does not confirm.
func judgeOwners(view map[string]ownerNow, err error, ts []audit.Tenure) {
	_, someUnreadable := view[unreadableGroups]
	for i := range ts {
		t := &ts[i]
		if !t.Open() || t.Missing {
			continue
		}
		n, ok := view[t.Group]
		switch {
		case err != nil, !ok && someUnreadable:
			t.Unconfirmed = true
		case !ok:
		case n.node != t.Owner.Node:
			t.Unconfirmed = true
		case n.Stale:
			// No longer confirmed, but held until the last confirmation.
			t.Unconfirmed, t.Confirmed = true, n.Confirmed
			heldUntilConfirmed(t, n.Confirmed)
		default:
			heldUntilConfirmed(t, n.Confirmed)
		}
	}
}

// historyOut tells each batch of events as tenures into rows.
type historyOut struct {
	w     window
	rows  historyRows
	total int // the rows told, shown or not
	// judge marks the open tenures of ts (told from events) that nothing
	// confirms; an error when the read it takes for that was cancelled.
	judge func(events []publish.Event, ts []audit.Tenure) error
	// scope adds to ts the stretches of missing owners of the groups
	// their bridges no longer observe (markOutOfScope).
	scope func(events []publish.Event, ts []audit.Tenure) []audit.Tenure
	// owners reads the owners view (nil for audit logs); seen holds the
	// groups some stored event tells of, or whose row the view told.
	owners func() (map[string]ownerNow, error)
	seen   map[string]bool
	// reread reads the events of some groups again (rereader).
	reread func(groups map[string]bool) ([]publish.Event, error)
	// tell tells events as tenures (teller).
	tell func([]publish.Event) []audit.Tenure
	log  *slog.Logger
}

// batch takes the events of a batch of groups, merged, and the rows of
// the owners the owners view names in groups no event tells of that sort
// before the batch's last group: no later batch holds them (each batch's
// groups sort after those before it), and their rows stand in group order
// with the others. They came after every other row before.
func (h *historyOut) batch(events []publish.Event) error {
	ts, err := h.told(events)
	if err != nil {
		return err
	}
	if h.owners != nil && len(ts) > 0 {
		more, err := h.unheardUpTo(ts[len(ts)-1].Group, false)
		if err != nil {
			return err
		}
		ts = mergeGroups(ts, more)
	}
	h.total += len(ts)
	if historyBatchTold != nil {
		historyBatchTold()
	}
	return h.rows.add(h.w.tenures(ts))
}

// historyBatchTold, when set (by tests), is called once a batch of groups
// was told, before the source is read again for the next.
var historyBatchTold func()

// told is the rows events tell, marked and judged; their groups are seen.
func (h *historyOut) told(events []publish.Event) ([]audit.Tenure, error) {
	for _, e := range events {
		h.seen[e.Group] = true
	}
	ts := h.scope(events, h.tell(events))
	if anyOpen(ts) {
		if err := h.judge(events, ts); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

// unheard adds the rows of the owners the owners view names in groups no
// stored event tells of and no batch placed (unheardUpTo).
func (h *historyOut) unheard() error {
	if h.owners == nil {
		return nil
	}
	ts, err := h.unheardUpTo("", true)
	if err != nil || len(ts) == 0 {
		return err
	}
	h.total += len(ts)
	return h.rows.add(h.w.tenures(ts))
}

// unheardUpTo is the rows of the owners the owners view names in groups
// not seen yet that sort before last (all: whatever they sort as): told
// from their events when a read after the view's finds some (the group's
// first event came after the events were read: no gap), else from the
// view (unheardTenures).
func (h *historyOut) unheardUpTo(last string, all bool) ([]audit.Tenure, error) {
	view, err := h.owners()
	if err != nil {
		if all {
			// judge warns only at an open tenure, and --json has no note:
			// with every event dropped, nothing else says it.
			h.log.Warn("could not read the owners view: owners of groups whose stored events were all dropped are left out", "err", err)
		}
		return nil, nil
	}
	want := map[string]bool{}
	for g, n := range view {
		if n.node != "" && !h.seen[g] && (all || g < last) {
			want[g] = true
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	events, err := h.reread(want)
	if err != nil {
		return nil, err
	}
	ts, err := h.told(events)
	if err != nil {
		return nil, err
	}
	for g := range want {
		if h.seen[g] {
			delete(want, g) // told from its events
		}
		h.seen[g] = true
	}
	return mergeGroups(ts, unheardTenures(h.log, view, want)), nil
}

// unheardTenures is, from the owners view, the open tenures of the owners
// it names in groups (those no stored event tells of: the stream's or
// topic's retention, --nats-max-age say, dropped every event of a group
// whose owner still holds, an idle group's), in group order, and says so.
// Such a row is the owner's open tenure from when the view says it began
// (its since, "≤" when the bridge first saw it in a snapshot), GAP maybe
// (the owners before it went with their events), judged by the view as
// the other open tenures. Before, the group had no row at all while who
// named its owner.
func unheardTenures(log *slog.Logger, view map[string]ownerNow, groups map[string]bool) []audit.Tenure {
	var ts []audit.Tenure
	for g := range groups {
		t := view[g].tenure
		t.LastSeen, t.Gap = t.From, true
		ts = append(ts, t)
	}
	if len(ts) == 0 {
		return nil
	}
	slices.SortFunc(ts, func(x, y audit.Tenure) int { return strings.Compare(x.Group, y.Group) })
	log.Warn("no stored event tells of the owner the owners view names: the events were dropped (the stream's or topic's retention); its row is told from the owners view, GAP maybe", "groups", len(ts))
	judgeOwners(view, nil, ts)
	return ts
}

// mergeGroups merges x and y, each in History's order (by group, each
// group's rows together) and of groups the other has not, into that order.
func mergeGroups(x, y []audit.Tenure) []audit.Tenure {
	if len(y) == 0 {
		return x
	}
	out := make([]audit.Tenure, 0, len(x)+len(y))
	for len(x) > 0 && len(y) > 0 {
		if y[0].Group < x[0].Group {
			out, y = append(out, y[0]), y[1:]
		} else {
			out, x = append(out, x[0]), x[1:]
		}
	}
	return append(append(out, x...), y...)
}

// rereader returns what reads again, from the stream or topic (src; nil
// for audit logs), the events of some groups (of group, or all), merged:
// the owners view is read after the events, and a group whose first
// event came between the two reads has an owner in the view and no event
// read. JetStream stores a change's event before its owner, so a read
// after the view's holds the events of every owner the view names that
// were not dropped; Kafka takes both in one write, to two topics, and an
// owner record may show a moment before its event does.
func (a *app) rereader(ctx context.Context, sf *sourceFlags, src, group string) func(map[string]bool) ([]publish.Event, error) {
	if src == "" {
		return nil
	}
	return func(groups map[string]bool) ([]publish.Event, error) {
		var pass audit.Pass
		if src == "nats" {
			p, closeNC, err := a.natsPass(ctx, sf, group)
			if err != nil {
				return nil, err
			}
			defer closeNC()
			pass = p
		} else {
			p, err := a.kafkaPass(sf, group)
			if err != nil {
				return nil, err
			}
			pass = p
		}
		var events []publish.Event
		err := pass(ctx, func(g string) bool { return g == "" || groups[g] }, func(e publish.Event) {
			if groups[e.Group] {
				events = append(events, e)
			}
		})
		return mergeBySource(events), err
	}
}

// anyOpen reports whether a tenure of ts is open and is no stretch of
// missing owners: one a bridge's heartbeat may confirm.
func anyOpen(ts []audit.Tenure) bool {
	for _, t := range ts {
		if t.Open() && !t.Missing {
			return true
		}
	}
	return false
}

// historyRows are the rows a history shows, as its batches tell them:
// held until there are more than hold, then kept in a file
// (audit.Spool).
type historyRows struct {
	hold   int
	asJSON bool
	held   []audit.Tenure
	spool  *audit.Spool
}

func (r *historyRows) add(ts []audit.Tenure) error {
	if r.spool == nil && len(r.held)+len(ts) <= r.hold {
		r.held = append(r.held, ts...)
		return nil
	}
	if r.spool == nil {
		s, err := audit.NewSpool(r.asJSON)
		if err != nil {
			return err
		}
		r.spool = s
		err = s.Add(r.held...)
		r.held = nil
		if err != nil {
			return err
		}
	}
	return r.spool.Add(ts...)
}

func (r *historyRows) close() {
	if r.spool != nil {
		r.spool.Close()
	}
}

// historyBatchRead, when set (by tests), is called as each batch read from
// the source is handed on, before it is told.
var historyBatchRead func()

// notGiven leaves out of names (audit.Strays') the files given an
// --audit of their own, as its warning tells: read, they were still said
// not to be (TestHistoryWithADateNamedFileGivenItsOwnAuditDoesNotWarnOfIt).
func notGiven(names, files []string) []string {
	given := map[string]bool{}
	for _, f := range files {
		if abs, err := filepath.Abs(f); err == nil {
			given[abs] = true
		}
	}
	var out []string
	for _, n := range names {
		if abs, err := filepath.Abs(n); err != nil || !given[abs] {
			out = append(out, n)
		}
	}
	return out
}

// readAudit reads the events of group ("" for all) from the audit logs in
// files (one per bridge, each with its rotated files) and hands fn each
// batch of groups merged (audit.Merge: per group by zxid, each line once),
// holding about heldEvents events at once. Lines that are not herald
// events (a torn line a crash left, a corrupt one) are skipped with a
// warning, as the log holds them; but a log none of whose lines is a
// herald event is no audit log at all (--audit /etc/passwd), not an empty
// history.
func (a *app) readAudit(ctx context.Context, files []string, group string, heldEvents int, fn func(events []publish.Event) error) error {
	for _, f := range files {
		if f == "" {
			return usageErr("--audit is empty: give the audit log's file name")
		}
	}
	counted := func(reads []audit.LogRead) { a.auditCounted = reads }
	reads, err := audit.ReadBatchesCounted(ctx, files, group, heldEvents, counted, func(logs [][]publish.Event) error {
		if historyBatchRead != nil {
			historyBatchRead()
		}
		// One log too: a log's order is the order its bridge wrote, which
		// need not be the order of the changes.
		return fn(audit.Merge(logs...))
	})
	if err != nil {
		return err
	}
	for _, r := range reads {
		strays, _ := audit.Strays(r.Path)
		if strays = notGiven(strays, files); len(strays) > 0 {
			a.log.Warn("files beside the audit log are named by another rotation than herald's (logrotate's numbers or dates): they are not read with it, and an owner of a group they hold, last seen before the group's last event in them, is shown as not confirmed, as it may have lost the group in them; "+
				"herald rotates its log itself, so let nothing else rotate it, and give such a file its own --audit to read it (a gzip or bzip2 one as it is, audit.log.2.gz; decompress an .xz, .zst, .lz4 or .Z one first)", "file", r.Path, "not read", strays)
		}
		if missing, _ := audit.MissingRotated(r.Path); len(missing) > 0 {
			a.log.Warn("rotated files of the audit log are missing between the others: what they held is not in this history", "file", r.Path, "missing", missing)
		}
		var le *audit.LineError
		if !errors.As(r.Malformed, &le) {
			continue
		}
		if r.Records == 0 {
			return fmt.Errorf("--audit %s holds no herald audit records: not one of its lines is a herald event (the first, %s:%d: %v); "+
				"an audit log is what herald bridge --audit FILE writes, one JSON event per line", r.Path, le.File, le.Line, le.Err)
		}
		a.log.Warn("skipped malformed lines in the audit log", "file", r.Path, "err", r.Malformed)
	}
	return nil
}
