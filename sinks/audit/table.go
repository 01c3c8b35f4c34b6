package audit

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/zkherald/herald/publish"
)

// WriteTable renders tenures as the table `herald history` prints, the same
// for every source. It states only what was observed: a start nobody saw
// is "≤ <first seen holding>", an end nobody saw "≥ <last seen holding>"
// (END "not seen"), and HELD FOR is "≥ <what was seen>" unless both ends
// were seen. TWO OWNERS says "possible" where another client of the group
// may have believed it owned meanwhile (Tenure.TwoOwners). An open
// tenure's HELD FOR counts to the last time it was seen
// holding, not to now: now is kept for callers and not used. An open
// tenure no bridge confirms (Tenure.Unconfirmed) says "open, last
// confirmed <time>" rather than "holding". A Missing
// row says "(not observed: owners may be missing)" from the group's last
// observation to the event that found it empty, GAP "maybe".
func WriteTable(w io.Writer, ts []Tenure, now time.Time) error {
	_ = now
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTERM\tOWNER\tFROM\tUNTIL\tHELD FOR\tEND\tGAP\tTWO OWNERS")
	for _, t := range ts {
		if t.Missing {
			writeMissing(tw, t)
			continue
		}
		from, until, held, end := "?", "holding", "?", "-"
		if !t.From.IsZero() {
			from = t.From.UTC().Format(time.RFC3339)
			if !t.FromSeen {
				from = "≤ " + from
			}
		}
		switch {
		case t.Open() && t.Unconfirmed && !t.Confirmed.IsZero():
			until = "open, last confirmed " + t.Confirmed.UTC().Format(time.RFC3339)
		case t.Open() && t.Unconfirmed:
			until = "open, not confirmed"
		case t.Open():
		case !t.UntilSeen:
			until, end = "≥ "+t.Until.UTC().Format(time.RFC3339), "not seen"
			if t.Reason != "" {
				end = string(t.Reason) + ", seen late" // publish.Event.NotBefore
			}
		default:
			until, end = t.Until.UTC().Format(time.RFC3339), string(t.Reason)
			if end == "" {
				end = "unknown"
			}
		}
		switch {
		case t.From.IsZero():
		case t.Exact():
			held = roundHeld(t.HeldFor).String()
		default:
			held = "≥ " + roundHeld(t.HeldFor).String()
		}
		gap := "-"
		if t.Gap {
			gap = "maybe"
		}
		two := "-"
		if t.TwoOwners {
			two = "possible"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Group, strconv.FormatInt(t.Term, 10),
			ownerName(t.Owner), from, until, held, end, gap, two)
	}
	return tw.Flush()
}

// writeMissing writes a stretch in which owners may have held unseen: no
// owner, no term, from the group's last observation before it ("?" when
// none) to the event that found it empty, GAP "maybe".
func writeMissing(w io.Writer, t Tenure) {
	from := "?"
	if !t.From.IsZero() {
		from = t.From.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "%s\t-\t(not observed: owners may be missing)\t%s\t%s\t-\t-\tmaybe\t-\n", t.Group, from, t.Until.UTC().Format(time.RFC3339))
}

func ownerName(p publish.Participant) string {
	switch {
	case p.ID != "" && p.ID != p.Node:
		return p.ID + " (" + p.Node + ")"
	case p.Node != "":
		return p.Node
	}
	return "?"
}

// roundHeld keeps three significant figures: 2.747s, 33.2ms, 1h2m3s.
func roundHeld(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
