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
// for every source. now is used for the "held for" of open tenures.
func WriteTable(w io.Writer, ts []Tenure, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTERM\tOWNER\tFROM\tUNTIL\tHELD FOR\tEND\tGAP")
	for _, t := range ts {
		from, until, held, end := "?", "holding", "?", "-"
		if !t.From.IsZero() {
			from = t.From.UTC().Format(time.RFC3339)
		}
		if !t.Open() {
			until, end = t.Until.UTC().Format(time.RFC3339), string(t.Reason)
			if end == "" {
				end = "unknown"
			}
		}
		switch {
		case t.From.IsZero():
		case t.Open():
			held = now.Sub(t.From).Truncate(time.Second).String() + "+"
		default:
			held = roundHeld(t.HeldFor).String()
		}
		gap := "-"
		if t.Gap {
			gap = "maybe"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Group, strconv.FormatInt(t.Term, 10),
			ownerName(t.Owner), from, until, held, end, gap)
	}
	return tw.Flush()
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
