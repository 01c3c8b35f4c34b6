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
	// before and after, in a chart of a window (BuildWindow), are the
	// group's rows next to the first and the last row shown, left out as
	// outside the window. They are not drawn, but they say what the
	// stretches at the window's edges were: without before, the stretch
	// from the window's start to a first row that follows a gap would be
	// drawn empty, as if the group had been observed without an owner.
	before, after *audit.Tenure
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
	return margins(build(events, audit.History(events), now, held), held == nil)
}

// margins widens c so a tenure's first moment is not on the edge, nor
// (at the end too, when no observer vouches for the present) the last
// event.
func margins(c Chart, end bool) Chart {
	margin := c.To.Sub(c.From) / 40
	c.From = c.From.Add(-margin)
	if end {
		c.To = c.To.Add(margin)
	}
	return c
}

// BuildWindow makes the chart of events up to now, as Build does with no
// observer's view of the present, from ts, the events' tenures
// (audit.History(events), which the caller has already worked out for
// keep; the history of a long audit log takes a while), showing only the
// rows keep accepts (the
// rows overlapping a window: keep is the caller's, so that the chart shows
// what its table shows) and the candidate marks between from and to (a
// zero from or to leaves that side open). The rows are those of the whole
// history, not cut at the window's edges; an open tenure is drawn not seen
// since its last sighting up to now. The time axis spans the window, cut
// to what is drawn, with no margins: a margin would show a stretch outside
// the window, where rows that are not drawn may have been held.
func BuildWindow(events []publish.Event, ts []audit.Tenure, now, from, to time.Time, keep func(audit.Tenure) bool) Chart {
	b := NewWindowBuilder(now, from, to)
	b.Add(events, ts, keep)
	return b.Chart()
}

// Builder makes a chart a batch of groups at a time, holding only the
// lines drawn, not the events: BuildWindow's chart (NewWindowBuilder), or
// Build's with no observer's view of the present (NewBuilder), of events
// too many to hold at once. Each group's events must come in one batch.
type Builder struct {
	now, from, to time.Time
	window        bool
	lines         []Line
	all           Chart // the extent of every batch so far, as build has it
}

// NewBuilder makes Build's chart of the events added, up to the last of
// them.
func NewBuilder() *Builder { return &Builder{} }

// NewWindowBuilder makes BuildWindow's chart of the events added.
func NewWindowBuilder(now, from, to time.Time) *Builder {
	return &Builder{now: now, from: from, to: to, window: true}
}

// Add draws a batch of whole groups: their events and ts, the tenures
// they tell. A window builder shows the rows keep accepts (BuildWindow);
// keep is called during Add only.
func (b *Builder) Add(events []publish.Event, ts []audit.Tenure, keep func(audit.Tenure) bool) {
	c := build(events, ts, b.now, nil)
	first := c.From
	if len(events) == 0 {
		first = time.Time{} // build's stand-in start for no events
	}
	if !first.IsZero() && (b.all.From.IsZero() || first.Before(b.all.From)) {
		b.all.From = first
	}
	if c.To.After(b.all.To) {
		b.all.To = c.To
	}
	for _, l := range c.Lines {
		if b.window {
			l = l.window(b.from, b.to, keep)
			if len(l.Tenures) == 0 && len(l.Marks) == 0 {
				continue
			}
			// Copies: pointing into the batch's rows, they would keep
			// every row of the group alive.
			for _, p := range []**audit.Tenure{&l.before, &l.after} {
				if *p != nil {
					t := **p
					*p = &t
				}
			}
		}
		b.lines = append(b.lines, l)
	}
}

// Chart is the chart of the batches added.
func (b *Builder) Chart() Chart {
	all := b.all
	if b.window && b.now.After(all.To) { // nothing added
		all.To = b.now
	}
	if all.From.IsZero() || !all.From.Before(all.To) {
		all.From = all.To.Add(-time.Minute)
	}
	if !b.window {
		all.Lines = b.lines
		return margins(all, true)
	}
	c := Chart{Lines: b.lines}
	var first, last time.Time // what is drawn reaches from first to last
	reach := func(a, b time.Time) {
		if first.IsZero() || a.Before(first) {
			first = a
		}
		if b.After(last) {
			last = b
		}
	}
	for _, w := range c.Lines {
		for _, s := range w.Spans(all.From, all.To) {
			reach(s.From, s.To)
		}
		for _, m := range w.Marks {
			reach(m.At, m.At)
		}
	}
	from, to := b.from, b.to
	c.From, c.To = first, last
	if !from.IsZero() && (c.From.IsZero() || from.After(c.From)) {
		c.From = from
	}
	if !to.IsZero() && (c.To.IsZero() || to.Before(c.To)) {
		c.To = to
	}
	switch {
	case c.From.IsZero() && c.To.IsZero(): // nothing shown, no window given
		c.From, c.To = all.From, all.To
	case c.To.IsZero(): // nothing shown, after from
		c.To = c.From.Add(time.Minute)
	case c.From.IsZero() || !c.From.Before(c.To):
		// One moment: the minute up to it, as Build, within the window.
		c.From = c.To.Add(-time.Minute)
		if from.After(c.From) && from.Before(c.To) {
			c.From = from
		}
	}
	return c
}

// window is the line with only the rows keep accepts and the marks
// between from and to, and the rows next to those shown (before, after).
// A line none of whose rows is shown keeps as before the last row that
// ends before from, and as after the first that starts after to: the
// stretch between them is what its marks lie in.
func (l Line) window(from, to time.Time, keep func(audit.Tenure) bool) Line {
	w := Line{Group: l.Group}
	firstKept, lastKept := -1, -1
	for i, t := range l.Tenures {
		if !keep(t) {
			continue
		}
		if firstKept < 0 {
			firstKept = i
		}
		lastKept = i
		w.Tenures = append(w.Tenures, t)
	}
	if firstKept < 0 { // where the window falls among the rows
		firstKept = len(l.Tenures)
		for i, t := range l.Tenures {
			if !to.IsZero() && t.From.After(to) {
				firstKept = i
				break
			}
		}
		lastKept = firstKept - 1
	}
	if firstKept > 0 {
		w.before = &l.Tenures[firstKept-1]
	}
	if lastKept+1 < len(l.Tenures) {
		w.after = &l.Tenures[lastKept+1]
	}
	for _, m := range l.Marks {
		if (from.IsZero() || !m.At.Before(from)) && (to.IsZero() || !m.At.After(to)) {
			w.Marks = append(w.Marks, m)
		}
	}
	return w
}

// build is Build without the margins, of the events and their tenures
// ts: from the first event to now (or the last event, when later).
func build(events []publish.Event, ts []audit.Tenure, now time.Time, held map[string]string) Chart {
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
	for _, t := range ts {
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
// In a chart of a window, the stretches next to the rows left out are
// laid out as the whole history has them; a stretch wholly outside the
// chart is left out.
func (l Line) Spans(from, to time.Time) []Span {
	rows := make([]*audit.Tenure, 0, len(l.Tenures)+2)
	if l.before != nil {
		rows = append(rows, l.before)
	}
	for i := range l.Tenures {
		rows = append(rows, &l.Tenures[i])
	}
	var out []Span
	for i, t := range rows {
		if t == l.after {
			break // the stretch after it is past the window too
		}
		last := i+1 == len(rows)
		start, end := l.bounds(t, last && l.heldNow(len(l.Tenures)-1), from, to)
		switch {
		case t == l.before: // not drawn
		case t.Missing:
			out = append(out, Span{Kind: Gap, From: start, To: end, Tenure: t})
		default:
			out = append(out, Span{Kind: Held, From: start, To: end, Tenure: t})
		}
		next, nt := to, l.after
		if !last {
			nt = rows[i+1]
		}
		if nt != nil {
			next, _ = l.bounds(nt, false, from, to)
		}
		if !next.After(end) || next.Before(from) || end.After(to) {
			continue
		}
		switch {
		case t.Missing:
			if nt != nil && nt.Gap {
				out = append(out, Span{Kind: Gap, From: end, To: next})
			}
		case nt != nil && nt.Gap && !nt.Missing:
			out = append(out, Span{Kind: Gap, From: end, To: next})
		case t.Open() && (nt != nil || !l.heldNow(len(l.Tenures)-1)), !t.Open() && !t.UntilSeen:
			out = append(out, Span{Kind: Unseen, From: end, To: next, Tenure: t})
		}
	}
	return out
}

// bounds is where a row's stretch begins and ends: a tenure's from its
// start (or when it was first seen) to its end, or to when it was last
// seen holding, or to the chart's end while an observer sees it holding
// now (heldNow); a Missing row's from the group's last observation (the
// chart's start when none is known) to the event that found the group
// empty.
func (l Line) bounds(t *audit.Tenure, heldNow bool, from, to time.Time) (time.Time, time.Time) {
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
	case t.Open() && heldNow:
		end = to
	case t.Open():
		end = t.LastSeen
	}
	if end.Before(start) {
		end = start
	}
	return start, end
}

// heldNow: tenure i is the last (no later row left out of a window) and
// an observer sees its owner holding now.
func (l Line) heldNow(i int) bool {
	return i >= 0 && i == len(l.Tenures)-1 && l.after == nil && l.Tenures[i].Open() && !l.Tenures[i].Missing && l.HeldNow != "" && l.HeldNow == l.Tenures[i].Owner.Node
}
