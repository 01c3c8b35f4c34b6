package main

import (
	"time"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

// auditBridges reads the heartbeats kept beside the audit logs in files,
// warning of those missing or unreadable.
func (a *app) auditBridges(files []string) *publish.Bridges {
	bridges := publish.NewBridges()
	for _, f := range files {
		h, found, err := audit.ReadHeartbeat(f)
		switch {
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
// wrote of each group.
func judgeAudit(bridges *publish.Bridges, events []publish.Event, ts []audit.Tenure, now time.Time) {
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
