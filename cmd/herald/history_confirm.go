package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

// auditBridges reads the heartbeats kept beside the audit logs in files,
// warning of those missing or unreadable. A date-named file given its own
// --audit, as history's warning tells, has none of its own: its bridge's
// is the one beside the log it was renamed from, and the warning that
// none was beside it, "not copied with the log", was a false alarm
// (TestHistoryOfADateNamedFileGivenItsOwnAuditConfirmsWithTheLogsHeartbeat).
func (a *app) auditBridges(files []string) *publish.Bridges {
	bridges := publish.NewBridges()
	renamed := datedOfGiven(files)
	for _, f := range files {
		h, found, err := audit.ReadHeartbeat(f)
		switch {
		case !found && err == nil && renamed[absPath(f)]:
			// Its bridge's heartbeat is the renamed log's, read with it.
		case err != nil:
			a.log.Warn("cannot read the heartbeat beside the audit log: the owners only its bridge would confirm are shown as not confirmed", "file", f, "err", err)
			bridges.SetUnreadable(err)
		case found:
			bridges.Put(h)
		default:
			a.log.Warn("no heartbeat beside the audit log (it was not copied with the log, or herald before 2026-11-26 wrote the log): the owners only its bridge would confirm are shown as not confirmed", "file", audit.HeartbeatPath(f))
		}
	}
	return bridges
}

// judgeAudit marks, from audit logs, the open tenures no bridge confirms
// at now, judged with the heartbeats kept beside the logs
// (audit.HeartbeatPath) as the owners bucket's readers judge its values:
// a tenure is confirmed by a bridge whose events showed its group and
// whose heartbeat is active, recent and covers the group, or by the active
// bridge of that bridge's HA election when its log is read too. Nothing
// else confirms: a tenure whose bridges left no heartbeat (a log copied
// without its heartbeat file, or written by herald before 2026-11-26) is
// not confirmed, with a warning naming the missing file; one whose
// heartbeat file cannot be read makes the tenures only it would confirm
// stale, saying why.
// Events are the events ts was told from, which name the bridges that
// wrote of each group. Unread is when the files beside the logs that
// history does not read last wrote of a group (unreadUntil): a tenure
// last seen before it may have ended in them, so no heartbeat confirms it
// (TestHistoryDoesNotConfirmAnOwnerADateNamedFileMayHaveEnded). Nor
// does it confirm an owner not seen after the rotated files missing that
// may have ended it (endedBeforeHoles).
func judgeAudit(bridges *publish.Bridges, events []publish.Event, ts []audit.Tenure, now time.Time, unread func(group string) time.Time, ended func(group string) time.Time) {
	writers := writersOf(events)
	for i := range ts {
		t := &ts[i]
		if !t.Open() || t.Missing {
			continue
		}
		// Not judged (no heartbeat of its bridges in hand) is not
		// confirmed either: "holding" would say only that no later event
		// in the log ended the tenure.
		f := bridges.JudgeGroup(now, t.Group, writers[t.Group]...)
		if u := laterOf(unread(t.Group), ended(t.Group)); !u.IsZero() && !t.LastSeen.After(u) {
			// The heartbeat says every change before it is stored, not
			// that history read it: its end may be in that file.
			f = publish.Freshness{Stale: true}
		}
		if f.Stale || f.BridgeState == "" {
			t.Unconfirmed, t.Confirmed = true, f.Confirmed
		}
		// Confirmed or not now, it was held until its last confirmation.
		heldUntilConfirmed(t, f.Confirmed)
	}
}

// heldUntilConfirmed counts an open tenure that a bridge confirmed holding
// until that confirmation, also when the bridge no longer confirms it (it
// stopped or died since): its HeldFor, a lower bound, otherwise counts
// only to the last event about the owner (often its own election, which
// made a lock confirmed for an hour read "≥ 0s").
func heldUntilConfirmed(t *audit.Tenure, confirmed time.Time) {
	if t.From.IsZero() || t.Missing || !t.Open() {
		return
	}
	if d := confirmed.Sub(t.From); d > t.HeldFor {
		t.HeldFor = d
	}
}

// unreadUntil tells, of each group, when its last event in the files
// beside the audit logs that history does not read (audit.Strays, not
// given an --audit of their own) was written; zero when they hold none of
// it. Such a file, logrotate's audit.log.20261129, holds what the bridge
// wrote up to then. Every owner last seen before the newest such file's
// time read unconfirmed, those of groups it held nothing of too, and that
// time was its mtime, now for a file copied back without it
// (TestHistoryConfirmsAnOwnerADateNamedFileHoldsNothingOf). A file that
// cannot be read whole counts for every group, up to its mtime. A read
// cancelled (ctx) is an error.
func (a *app) unreadUntil(ctx context.Context, files []string) (func(group string) time.Time, error) {
	var all time.Time // the mtime of the unread files not read whole
	until := map[string]time.Time{}
	for _, f := range files {
		strays, _ := audit.Strays(f)
		for _, s := range notGiven(strays, files) {
			last, err := audit.LastEvents(ctx, s)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("history stopped while reading %s, beside the audit log, to tell which owners it may have ended: %w", s, ctx.Err())
			}
			if err == nil {
				for g, t := range last {
					until[g] = laterOf(until[g], t)
				}
				continue
			}
			a.log.Warn("cannot read a file another rotation named beside the audit log: an owner last seen before it was written is shown as not confirmed", "file", s, "err", err)
			if fi, err := os.Stat(s); err != nil {
				all = time.Now()
			} else {
				all = laterOf(all, fi.ModTime())
			}
		}
	}
	return func(group string) time.Time { return laterOf(all, until[group]) }, nil
}

// laterOf is the later of a and b.
func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// endedBeforeHoles tells, of the groups of the audit logs in files whose
// last event read lies before rotated files missing, when the events read
// after that hole begin (audit.EndedBeforeLastHole), the latest of the
// logs': the missing file may have ended the owner the events read leave
// holding, which read holding, confirmed, GAP -, with a warning alone
// (TestHistoryDoesNotConfirmAnOwnerARemovedRotatedFileMayHaveEnded). A log
// with a hole is read once more for it; one that cannot be leaves every
// group unconfirmed; one cancelled (ctx) is an error.
func (a *app) endedBeforeHoles(ctx context.Context, files []string) (func(group string) time.Time, error) {
	ended := map[string]time.Time{}
	for _, f := range files {
		gs, err := audit.EndedBeforeLastHole(ctx, f)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("history stopped while reading the audit log %s once more, for the owners the rotated files missing from it may have ended: %w", f, ctx.Err())
		}
		if err != nil {
			a.log.Warn("cannot tell which owners rotated files missing from the audit log may have ended: every open tenure is shown as not confirmed", "file", f, "err", err)
			return func(string) time.Time { return time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) }, nil
		}
		for g, t := range gs {
			ended[g] = laterOf(ended[g], t)
		}
	}
	return func(group string) time.Time { return ended[group] }, nil
}

// datedOfGiven names, by absolute path, the files among files that are
// files another rotation named beside another of them (audit.Strays).
func datedOfGiven(files []string) map[string]bool {
	given := map[string]bool{}
	for _, f := range files {
		given[absPath(f)] = true
	}
	dated := map[string]bool{}
	for _, f := range files {
		strays, _ := audit.Strays(f)
		for _, s := range strays {
			if abs := absPath(s); given[abs] {
				dated[abs] = true
			}
		}
	}
	return dated
}

// absPath is name made absolute, or name itself when it cannot be.
func absPath(name string) string {
	if abs, err := filepath.Abs(name); err == nil {
		return abs
	}
	return name
}
