package audit

import (
	"bufio"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

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
	// The columns are as wide as their widest cell and two spaces, as a
	// tabwriter makes them; but the rows are formatted twice, to measure
	// and then to write, rather than held: a year's history of a fleet
	// has millions of rows.
	var o tableOut
	for _, t := range ts {
		o.measure(tableRow(t))
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	o.write(bw, tableHeader)
	for _, t := range ts {
		o.write(bw, tableRow(t))
	}
	return bw.Flush()
}

// tableOut lays out the table: each column as wide as its widest cell
// measured, and two spaces.
type tableOut struct {
	width    [tableCols - 1]int
	measured bool // the header is measured
}

func (o *tableOut) measure(c tableCells) {
	if !o.measured {
		o.measured = true
		o.measure(tableHeader)
	}
	for i := range o.width {
		o.width[i] = max(o.width[i], utf8.RuneCountInString(c[i]))
	}
}

func (o *tableOut) write(bw *bufio.Writer, c tableCells) {
	if !o.measured {
		o.measure(tableHeader)
	}
	for i, n := range o.width {
		bw.WriteString(c[i])
		for pad := n + 2 - utf8.RuneCountInString(c[i]); pad > 0; pad-- {
			bw.WriteByte(' ')
		}
	}
	bw.WriteString(c[tableCols-1])
	bw.WriteByte('\n')
}

const tableCols = 9

type tableCells [tableCols]string

var tableHeader = tableCells{"GROUP", "TERM", "OWNER", "FROM", "UNTIL", "HELD FOR", "END", "GAP", "TWO OWNERS"}

// tableRow is the row of one tenure.
func tableRow(t Tenure) tableCells {
	if t.Missing {
		return missingRow(t)
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
	case t.ClocksDisagree:
		held = "? (clocks disagree)"
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
	return tableCells{t.Group, strconv.FormatInt(t.Term, 10), ownerName(t.Owner), from, until, held, end, gap, two}
}

// missingRow is a stretch in which owners may have held unseen: no owner,
// no term, from the group's last observation before it ("?" when none)
// to the event that found it empty, GAP "maybe".
func missingRow(t Tenure) tableCells {
	from := "?"
	if !t.From.IsZero() {
		from = t.From.UTC().Format(time.RFC3339)
	}
	return tableCells{t.Group, "-", "(not observed: owners may be missing)", from, t.Until.UTC().Format(time.RFC3339), "-", "-", "maybe", "-"}
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
