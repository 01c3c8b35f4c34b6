package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

// defaultHeldEvents is how many events `herald history --audit` holds at
// once by default: some 200 MB of a log, read, merged and told as
// tenures. A year's log of a busy fleet holds millions of events; holding
// them all would take gigabytes.
const defaultHeldEvents = 200_000

// auditOnly checks the flags of a history read from audit logs alone.
func auditOnly(sf *sourceFlags, heldEvents int) error {
	src, err := sf.which()
	switch {
	case err != nil:
		return err
	case src != "":
		return usageErr("give one source: --audit, --nats or --kafka")
	case heldEvents < 1:
		return usageErr("--events-in-memory %d: give how many events to hold at once, 1 or more (default %d)", heldEvents, defaultHeldEvents)
	}
	return nil
}

// auditHistory prints the history the audit logs in files tell, of group
// ("" for all), holding about heldEvents events at a time: the logs are
// read a batch of groups at a time (audit.ReadBatches), and each batch is
// merged, told as tenures, confirmed and cut to the window before the
// next is read. Only the rows shown are kept.
func (a *app) auditHistory(ctx context.Context, files []string, group string, heldEvents int, asJSON bool, w window) error {
	now := time.Now()
	var bridges *publish.Bridges // read at the first open tenure
	rows := historyRows{hold: heldEvents, asJSON: asJSON}
	defer rows.close()
	total := 0
	err := a.readAudit(ctx, files, group, heldEvents, func(events []publish.Event) error {
		ts := audit.History(events)
		total += len(ts)
		if anyOpen(ts) {
			if bridges == nil {
				bridges = a.auditBridges(files)
			}
			judgeAudit(bridges, events, ts, now)
		}
		return rows.add(w.tenures(ts))
	})
	if err != nil {
		return unreachableExit(err)
	}
	if rows.spool == nil {
		return a.writeHistory(rows.held, total, asJSON, w)
	}
	if w.set() && !asJSON {
		fmt.Fprintf(a.stdout, "rows overlapping %s, shown whole (times as recorded, not cut to the window)\n", w)
	}
	_, err = rows.spool.WriteTo(a.stdout)
	return err
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
	reads, err := audit.ReadBatches(ctx, files, group, heldEvents, func(logs [][]publish.Event) error {
		// One log too: a log's order is the order its bridge wrote, which
		// need not be the order of the changes.
		return fn(audit.Merge(logs...))
	})
	if err != nil {
		return err
	}
	for _, r := range reads {
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
