// Package timeline draws who led when: one line per group, one bar per
// tenure from its start to its end, labelled with its owner and term, and
// what was not observed drawn as such — a gap where an owner may be
// missing, an end nobody saw, an open tenure not seen since — never as if
// held. Candidates joining and leaving are marks on the line. It renders
// self-contained SVG, and HTML pages around it, with no script and no
// asset from elsewhere: the same drawing serves the bridge's live page and
// `herald history --html/--svg`.
package timeline

import (
	"sort"
	"time"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

// Chart is the drawing's model: the lines of a window of time.
type Chart struct {
	From, To time.Time
	Lines    []Line
}

// Line is one group's tenures and candidate marks.
type Line struct {
	Group   string
	Tenures []audit.Tenure
	Marks   []Mark
	// HeldNow, when set, is the owner node an observer sees holding at
	// the chart's end (the live page): its open tenure is drawn to the end
	// as held, not as "not seen since".
	HeldNow string
}

// Mark is a candidate joining or leaving.
type Mark struct {
	At     time.Time
	Joined bool
	Node   string
	ID     string
}

// Build makes the chart of events (from any source, in each group's
// order) up to now; held, when not nil, names per group the owner node an
// observer sees holding now.
func Build(events []publish.Event, now time.Time, held map[string]string) Chart {
	c := Chart{To: now}
	lines := map[string]*Line{}
	line := func(g string) *Line {
		l := lines[g]
		if l == nil {
			l = &Line{Group: g, HeldNow: held[g]}
			lines[g] = l
		}
		return l
	}
	for _, e := range events {
		if c.From.IsZero() || e.Time.Before(c.From) {
			c.From = e.Time
		}
		if e.Time.After(c.To) {
			c.To = e.Time
		}
		if e.Snapshot || (e.Type != publish.CandidateJoined && e.Type != publish.CandidateLeft) || e.Candidate == nil {
			continue
		}
		l := line(e.Group)
		l.Marks = append(l.Marks, Mark{At: e.Time, Joined: e.Type == publish.CandidateJoined, Node: e.Candidate.Node, ID: e.Candidate.ID})
	}
	for _, t := range audit.History(events) {
		l := line(t.Group)
		l.Tenures = append(l.Tenures, t)
	}
	for _, l := range lines {
		if len(l.Tenures) > 0 || len(l.Marks) > 0 {
			c.Lines = append(c.Lines, *l)
		}
	}
	sort.Slice(c.Lines, func(i, j int) bool { return c.Lines[i].Group < c.Lines[j].Group })
	if c.From.IsZero() || !c.From.Before(c.To) {
		c.From = c.To.Add(-time.Minute)
	}
	// Margins, so a tenure's first moment is not on the edge, nor (when no
	// observer vouches for the present) the last event.
	margin := c.To.Sub(c.From) / 40
	c.From = c.From.Add(-margin)
	if held == nil {
		c.To = c.To.Add(margin)
	}
	return c
}

// Kind says how a stretch of a line is drawn.
type Kind string

const (
	// Held: an owner was seen holding all along.
	Held Kind = "held"
	// Gap: an owner may be missing here (a gap flag, a start nobody saw
	// after another owner, or a stretch before a snapshot that found the
	// group empty and said gap).
	Gap Kind = "gap"
	// Unseen: nobody observed the group here: an owner's end that was not
	// seen, or an open tenure since it was last seen.
	Unseen Kind = "unseen"
)

// Span is one stretch of a line, what the SVG draws.
type Span struct {
	Kind     Kind
	From, To time.Time
	// Tenure is the tenure a held stretch (or the unseen end of one)
	// belongs to, or the Missing row a gap is drawn for (nil for a gap
	// before a tenure).
	Tenure *audit.Tenure
}

// Spans lays out a line from the chart's start to its end: each tenure's
// held stretch and, between and after them, what was not observed: a Gap
// where the next tenure says an owner may be missing, or where a row says
// owners may be missing (audit.Tenure.Missing: from the group's last
// observation, or the chart's start when none is known, to the event that
// found it empty), else Unseen where an end was not seen (or an open
// tenure since it was last seen), up to the next row or the chart's end.
func (l Line) Spans(from, to time.Time) []Span {
	var out []Span
	n := len(l.Tenures)
	for i := range l.Tenures {
		t := &l.Tenures[i]
		start, end := l.bounds(i, from, to)
		if t.Missing {
			out = append(out, Span{Kind: Gap, From: start, To: end, Tenure: t})
		} else {
			out = append(out, Span{Kind: Held, From: start, To: end, Tenure: t})
		}
		next := to
		if i+1 < n {
			next, _ = l.bounds(i+1, from, to)
		}
		if !next.After(end) {
			continue
		}
		switch {
		case t.Missing:
			if i+1 < n && l.Tenures[i+1].Gap {
				out = append(out, Span{Kind: Gap, From: end, To: next})
			}
		case i+1 < n && l.Tenures[i+1].Gap && !l.Tenures[i+1].Missing:
			out = append(out, Span{Kind: Gap, From: end, To: next})
		case t.Open() && (i+1 < n || !l.heldNow(i)), !t.Open() && !t.UntilSeen:
			out = append(out, Span{Kind: Unseen, From: end, To: next, Tenure: t})
		}
	}
	return out
}

// bounds is where row i's stretch begins and ends: a tenure's from its
// start (or when it was first seen) to its end, or to when it was last
// seen holding, or to the chart's end while an observer sees it holding
// now; a Missing row's from the group's last observation (the chart's
// start when none is known) to the event that found the group empty.
func (l Line) bounds(i int, from, to time.Time) (time.Time, time.Time) {
	t := l.Tenures[i]
	if t.Missing {
		start := t.From
		if start.IsZero() {
			start = from
		}
		if t.Until.Before(start) {
			start = t.Until
		}
		return start, t.Until
	}
	start := t.From
	if start.IsZero() {
		start = t.LastSeen
	}
	end := t.Until
	switch {
	case t.Open() && l.heldNow(i):
		end = to
	case t.Open():
		end = t.LastSeen
	}
	if end.Before(start) {
		end = start
	}
	return start, end
}

// heldNow: tenure i is the last and an observer sees its owner holding now.
func (l Line) heldNow(i int) bool {
	return i == len(l.Tenures)-1 && l.Tenures[i].Open() && !l.Tenures[i].Missing && l.HeldNow != "" && l.HeldNow == l.Tenures[i].Owner.Node
}
