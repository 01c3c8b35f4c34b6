package main

import (
	"strconv"
	"strings"

	"github.com/zkherald/herald/publish"
)

// eventLine renders one event as one readable line: time, type, group,
// owner and previous owner, term, reason, and the gap, suspect, snapshot
// and two-owners marks (the hazard's reason is in --json; a suspect
// candidate's reason is on the line: it says why a queue has no owner).
func eventLine(e publish.Event) string {
	var b strings.Builder
	b.WriteString(e.Time.UTC().Format("2006-01-02T15:04:05.000Z"))
	b.WriteString("  ")
	b.WriteString(padRight(string(e.Type), 16))
	b.WriteString("  ")
	b.WriteString(e.Group)
	if e.Candidate != nil {
		b.WriteString("  candidate=" + who(e.Candidate))
	}
	switch {
	case e.Type.Loses() && e.Owner == nil && e.Previous == nil:
		b.WriteString("  owner=none") // a snapshot finding the group empty
	case e.Type.Loses():
		// The owner who lost or released is the previous one; an owner
		// the event carries is the next, not the one who released.
		if e.Previous != nil {
			b.WriteString("  previous=" + who(e.Previous))
		}
		if e.Owner != nil {
			b.WriteString("  next=" + who(e.Owner))
		}
	default:
		if e.Owner != nil && e.Candidate == nil {
			b.WriteString("  owner=" + who(e.Owner))
		}
		if e.Previous != nil {
			b.WriteString("  previous=" + who(e.Previous))
		}
	}
	if e.Term != 0 {
		b.WriteString("  term=" + strconv.FormatInt(e.Term, 10))
	}
	if e.Reason != "" {
		b.WriteString("  reason=" + strconv.Quote(string(e.Reason)))
	}
	if e.Gap {
		b.WriteString("  GAP")
	}
	if e.Candidate != nil && e.Candidate.Suspect != "" {
		b.WriteString("  SUSPECT(" + e.Candidate.Suspect + ")")
	}
	if e.Snapshot {
		b.WriteString("  (snapshot)")
	}
	if e.Hazard != "" {
		b.WriteString("  TWO-OWNERS-POSSIBLE")
	}
	if e.Note != "" {
		b.WriteString("  note=" + strconv.Quote(e.Note))
	}
	return b.String()
}

func who(p *publish.Participant) string {
	if p.ID == "" || p.ID == p.Node {
		return p.Node
	}
	return p.ID + "(" + p.Node + ")"
}

func padRight(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return s + strings.Repeat(" ", n-len(s))
}
