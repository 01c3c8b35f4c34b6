package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/zkherald/herald/sinks/audit"
)

// windowForms is what --since and --until accept, for their errors.
const windowForms = "give an RFC 3339 time (2026-11-20T10:00:00Z, 2026-11-20T11:00:00.250+01:00) or a duration before now (90m, 2h, 3d, 1d12h; d is 24 hours)"

// window is the stretch of time `herald history --since/--until` asks
// for. The history is worked out from every event, since a tenure that
// began before the window needs its earlier events to be told right, and
// one held at its end needs the later event that ended it (reading a log
// cannot stop at until either); the window only chooses which of its rows
// are shown, whole: a row is never cut at the window's edges, so no time
// is printed that no event gave. A zero since or until leaves that side
// open.
type window struct {
	since, until time.Time
	// now is when history ran: the events cannot tell that an open tenure
	// lasts past it, so it does not reach a window that lies in the future.
	now time.Time
	// ends holds, for each row whose end no event showed, the latest it
	// can have ended (see endsOf); a row without one ended at its Until.
	// starts holds, for each row whose start no event showed, the
	// earliest it can have begun (see startsOf).
	ends, starts map[rowKey]time.Time
}

// rowKey names a row of the history: a tenure by its group and term, a
// stretch of missing owners by its group and start.
type rowKey struct {
	group string
	term  int64
	from  time.Time
}

func keyOf(t audit.Tenure) rowKey {
	if t.Missing {
		return rowKey{group: t.Group, from: t.From}
	}
	return rowKey{group: t.Group, term: t.Term}
}

// endsOf works out, for each row of ts whose end no event showed (its
// Until is only when it was last seen holding), the latest it can have
// ended: it ended before the next event of its group, so no later than
// the next row of the group began (or was first seen, or last seen when
// its start is not known either), and, with no row after it, up to now.
// Such a row overlaps a window that begins after it was last seen but
// before then: it may have held into the window. ts is in History's
// order, each group's rows together: the search for the next row stops at
// the group's end.
func endsOf(ts []audit.Tenure, now time.Time) map[rowKey]time.Time {
	ends := map[rowKey]time.Time{}
	for i, t := range ts {
		if t.UntilSeen || t.Open() {
			continue
		}
		end := now
		for _, n := range ts[i+1:] {
			if n.Group != t.Group {
				break
			}
			if b := firstKnown(n); !b.IsZero() {
				end = b
				break
			}
		}
		ends[keyOf(t)] = end
	}
	return ends
}

// startsOf works out, for each row of ts whose start no event showed (its
// From is only when it was first seen holding), the earliest it can have
// begun: after the previous row of its group was last known (its end, or
// when it was last seen holding), and, with no row before it, at any time
// (zero). Such a row overlaps a window that ends before it was first seen
// but after then: it may have held in the window, as a bridge stalled or
// down while it came to own. ts is in History's order, as for endsOf.
func startsOf(ts []audit.Tenure) map[rowKey]time.Time {
	starts := map[rowKey]time.Time{}
	for i, t := range ts {
		if t.FromSeen || t.From.IsZero() || t.Missing {
			continue // a stretch of missing owners begins at its From
		}
		var start time.Time
		if i > 0 && ts[i-1].Group == t.Group {
			start = lastKnown(ts[i-1])
		}
		if start.After(t.From) {
			start = t.From
		}
		starts[keyOf(t)] = start
	}
	return starts
}

// lastKnown is the latest time a row gives: its end, or when it was last
// seen holding, or its start.
func lastKnown(t audit.Tenure) time.Time {
	for _, c := range []time.Time{t.Until, t.LastSeen, t.From} {
		if !c.IsZero() {
			return c
		}
	}
	return time.Time{}
}

// firstKnown is the earliest time a row gives: its start, or when it was
// last seen or ended when the start is not known.
func firstKnown(t audit.Tenure) time.Time {
	for _, c := range []time.Time{t.From, t.LastSeen, t.Until} {
		if !c.IsZero() {
			return c
		}
	}
	return time.Time{}
}

// parseWindow reads --since and --until ("" when not given) at now.
func parseWindow(since, until string, now time.Time) (window, error) {
	w := window{now: now}
	var err error
	if w.since, err = windowBound("--since", since, now); err != nil {
		return w, err
	}
	if w.until, err = windowBound("--until", until, now); err != nil {
		return w, err
	}
	if !w.since.IsZero() && !w.until.IsZero() && w.since.After(w.until) {
		return w, usageErr("--since %s is after --until %s: no moment lies in both; %s to each, the earlier to --since",
			given(since, w.since), given(until, w.until), windowForms)
	}
	return w, nil
}

// windowBound reads one flag's value: an RFC 3339 time (with or without
// fractional seconds, at any offset), or a duration counted back from now.
func windowBound(flag, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, terr := time.Parse(time.RFC3339, v)
	if terr == nil {
		return t, nil
	}
	d, err := durationBack(v)
	switch {
	case err != nil && strings.ContainsAny(v, "T:"):
		// Meant as a time: what is wrong with it helps most.
		return time.Time{}, usageErr("%s %q: not an RFC 3339 time (%v); %s", flag, v, terr, windowForms)
	case err != nil:
		return time.Time{}, usageErr("%s %q: neither a time nor a duration; %s", flag, v, windowForms)
	case d < 0:
		return time.Time{}, usageErr("%s %q: a duration counts back from now and cannot be negative; %s", flag, v, windowForms)
	}
	// From the second now falls in: the window is then printed as the
	// table prints times, and no digits the user did not give appear.
	return now.Truncate(time.Second).Add(-d), nil
}

// given is a flag's value as the user gave it, and the time it stands
// for when that was a duration.
func given(v string, t time.Time) string {
	if _, err := time.Parse(time.RFC3339, v); err == nil {
		return v
	}
	return v + " (" + windowStamp(t) + ")"
}

// durationBack reads a Go duration (90m, 2h30m), or one that starts with
// whole days of 24 hours (3d, 1d12h): Go's durations have no days, and
// a window of an incident a few days ago is the common question.
func durationBack(v string) (time.Duration, error) {
	days, rest, ok := strings.Cut(v, "d")
	if !ok {
		return time.ParseDuration(v)
	}
	n, err := strconv.ParseUint(days, 10, 64)
	if err != nil || n > math.MaxInt64/uint64(24*time.Hour) {
		return 0, fmt.Errorf("not a duration: %q", v)
	}
	d := time.Duration(n) * 24 * time.Hour
	if rest == "" {
		return d, nil
	}
	r, err := time.ParseDuration(rest)
	if err != nil || r < 0 || r > math.MaxInt64-d {
		return 0, fmt.Errorf("not a duration: %q", v)
	}
	return d + r, nil
}

// set reports whether a window was asked for.
func (w window) set() bool { return !w.since.IsZero() || !w.until.IsZero() }

// overlaps reports whether a row of the history (a tenure, or a stretch
// of missing owners) may share a moment with the window: it began no
// later than until and ended no earlier than since, or is still open. A
// start not seen counts at the earliest it can have been (see startsOf),
// an end not seen at the latest (see endsOf), not at the first or last
// time the owner was seen holding: the owner may have held in the window.
func (w window) overlaps(t audit.Tenure) bool {
	start := t.From
	if s, ok := w.starts[keyOf(t)]; ok && !t.FromSeen {
		start = s
	}
	if !w.until.IsZero() && start.After(w.until) {
		return false
	}
	switch {
	case w.since.IsZero():
		return true
	case t.Open():
		return !w.now.Before(w.since)
	}
	end := t.Until
	if e, ok := w.ends[keyOf(t)]; ok && !t.UntilSeen {
		end = e
	}
	return !end.Before(w.since)
}

// learn works out, from the rows of ts, when those whose ends were not
// seen can have begun and ended (see overlaps).
func (w *window) learn(ts []audit.Tenure) {
	w.ends, w.starts = endsOf(ts, w.now), startsOf(ts)
}

// tenures is the rows of ts that overlap the window, in their order.
func (w window) tenures(ts []audit.Tenure) []audit.Tenure {
	if !w.set() {
		return ts
	}
	w.learn(ts)
	var in []audit.Tenure
	for _, t := range ts {
		if w.overlaps(t) {
			in = append(in, t)
		}
	}
	return in
}

// String says which window is shown, for the text output and the page.
func (w window) String() string {
	switch {
	case w.since.IsZero():
		return "up to " + windowStamp(w.until)
	case w.until.IsZero():
		return "from " + windowStamp(w.since) + " on"
	}
	return windowStamp(w.since) + " to " + windowStamp(w.until)
}

// windowStamp writes t as the history's table does, in UTC to the second, or
// to the nanosecond when it has a fraction (a bound given to the
// millisecond is not shown rounded).
func windowStamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
