package audit

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/zkherald/herald/publish"
)

func TestRoundHeld(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{
		{2747546373 * time.Nanosecond, 2748 * time.Millisecond},
		{33180598 * time.Nanosecond, 33200 * time.Microsecond},
		{3723400 * time.Millisecond, 3723 * time.Second},
		{1500 * time.Nanosecond, 2 * time.Microsecond},
	} {
		if got := roundHeld(c.in); got != c.want {
			t.Errorf("roundHeld(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestWriteTableAlignsAsATabwriter: WriteTable measures its columns and
// writes its rows itself (a tabwriter holds every cell of a table of
// millions of rows); the result must be what a tabwriter makes of the
// same cells, multibyte ones (≤, ≥) and a missing stretch included.
func TestWriteTableAlignsAsATabwriter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ts := []Tenure{
		{Group: "/a", Term: 7, Owner: publish.Participant{ID: "alpha", Node: "n_0000000001"}, From: t0, FromSeen: true, Until: t0.Add(time.Minute), UntilSeen: true, HeldFor: time.Minute, Reason: "resigned"},
		{Group: "/a/much/longer/group", Term: 123456, Owner: publish.Participant{Node: "n_0000000002"}, From: t0.Add(2 * time.Minute), Until: t0.Add(3 * time.Minute), HeldFor: time.Minute},
		{Group: "/a", Missing: true, From: t0.Add(3 * time.Minute), Until: t0.Add(4 * time.Minute)},
		{Group: "/b", Term: 9, Owner: publish.Participant{ID: "ünïcode", Node: "n_0000000003"}, Gap: true, TwoOwners: true},
	}
	var got, want bytes.Buffer
	if err := WriteTable(&got, ts, t0); err != nil {
		t.Fatal(err)
	}
	tw := tabwriter.NewWriter(&want, 0, 0, 2, ' ', 0)
	for _, c := range append([]tableCells{tableHeader}, rowsOf(ts)...) {
		fmt.Fprintln(tw, strings.Join(c[:], "\t"))
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("WriteTable:\n%s\nwant, as a tabwriter aligns it:\n%s", got.String(), want.String())
	}
	if !strings.Contains(got.String(), "≥ ") || !strings.Contains(got.String(), "(not observed") {
		t.Errorf("the table lacks the multibyte or missing cells it is to align:\n%s", got.String())
	}
}

func rowsOf(ts []Tenure) []tableCells {
	var out []tableCells
	for _, t := range ts {
		out = append(out, tableRow(t))
	}
	return out
}
