package audit

import (
	"sort"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// row is a tenure being built.
type row struct {
	Tenure
	ended bool // Until is set (seen) or the tenure was seen superseded
	// order places the row among the group's rows: its term, or for a
	// Missing row the zxid that found the group empty (no lower than any
	// term seen before it: every owner it may hide came before that).
	order int64
	// era is the number of new ensembles (publish.Event.NewEnsemble) the
	// group's events showed before the row: rows of a later one come after.
	era int
}

// see records that the owner was holding at when.
func (r *row) see(when time.Time) {
	if when.After(r.LastSeen) {
		r.LastSeen = when
	}
}

// seenAt reports whether e's time is when its change happened, up to the
// observation delay: not for a snapshot, nor for a change its bridge may
// have seen late (NotBefore).
func seenAt(e publish.Event) bool { return !e.Snapshot && e.NotBefore == nil }

// late, for a tenure that e ends, takes an end e may have seen late as not
// seen: the tenure held until e.NotBefore (a sighting), and ended at a
// moment between then and e's time. The reason stays: it is known.
func (r *row) late(e publish.Event) {
	if e.NotBefore != nil && !e.Snapshot {
		r.see(*e.NotBefore)
		r.UntilSeen = false
	}
}

// groupHistory builds the tenures of one group from its events in order,
// read from a store that dropped its oldest events when trimmed.
func groupHistory(evs []publish.Event, trimmed bool) []Tenure {
	t := tenures{byTerm: map[int64]*row{}, seenID: map[string]bool{}, trimmed: trimmed}
	for _, e := range evs {
		t.add(e)
	}
	return t.result()
}

// tenures is one group's history as far as the events read so far tell.
// Each event is first a sighting (every copy of an event naming an owner
// says it held then), then, the first time its id is read, a change: an
// owner gained (gain), ready (ready), a loss (loss), or a snapshot finding
// nobody (nobody).
type tenures struct {
	rows   []*row
	byTerm map[int64]*row // the latest row of each term
	cur    *row           // the tenure held as far as the events tell
	last   *row           // the latest row that was current
	// gapNext: the next new owner may follow a hidden one.
	gapNext bool
	seenID  map[string]bool
	// before: an earlier event of the group was read.
	before bool
	// observed is when the group was last observed, before this event;
	// maxZxid the highest zxid of the events before this one.
	observed time.Time
	maxZxid  int64
	// missing is the Missing row of the event just before, to extend.
	missing *row
	maxTerm int64 // the highest term of a row so far
	era     int   // the new ensembles seen so far
	// trimmed: the store the events come from dropped its oldest ones
	// (retention, a purge), so a group's first stored event may not be
	// the first its bridges wrote.
	trimmed bool
}

// add reads the group's next event.
func (t *tenures) add(e publish.Event) {
	if e.Restarts() && !t.seenID[e.ID] {
		t.newEnsemble()
	}
	since, upTo := t.observed, t.maxZxid
	if e.Time.After(t.observed) {
		t.observed = e.Time
	}
	t.maxZxid = max(t.maxZxid, e.Zxid)
	t.sighting(e)
	if e.ID != "" && t.seenID[e.ID] {
		return
	}
	t.seenID[e.ID] = true
	after := t.before // whether this event follows others of the group
	t.before = true
	// A bridge's first event of a group is its first look, a snapshot.
	// A group whose first stored event is a change, in a store that
	// dropped its oldest events, lost the events before it: the owners
	// they told of may be hidden before its owner.
	dropped := t.trimmed && !after && !e.Snapshot
	prevMissing := t.missing
	t.missing = nil
	switch {
	case e.Owner == nil && (e.Type.Gains() || e.Type == publish.LeaderReady):
		// not a valid event
	case e.Type.Gains():
		t.gapNext = t.gapNext || dropped
		t.gain(e, after)
	case e.Type == publish.LeaderReady:
		t.ready(e)
	case e.Type.Loses() && e.Previous == nil:
		t.nobody(e, since, upTo, prevMissing)
	case e.Type.Loses():
		t.loss(e, since)
	case e.Owner != nil && e.Term != 0:
		t.named(e, after || dropped)
	}
}

// sighting takes what every copy of e says: the owner it names held at
// its time, and a snapshot after a stretch its bridge did not see names
// the owner it last reported, and a later moment it still held.
func (t *tenures) sighting(e publish.Event) {
	if e.Owner != nil && !e.Type.Loses() && !restatedAcrossAGap(e) {
		if r := t.byTerm[e.Term]; r != nil && (r.Owner.Node == "" || r.Owner.Node == e.Owner.Node) && !(r.ended && r.UntilSeen) {
			r.see(e.Time)
			r.TwoOwners = r.TwoOwners || e.Hazard != ""
		}
	}
	if l := e.LastSeen; l != nil && !l.At.After(e.Time) {
		if r := t.byTerm[l.Term]; r != nil && (r.Owner.Node == "" || r.Owner.Node == l.Owner.Node) && !(r.ended && r.UntilSeen) {
			r.see(l.At)
		}
	}
}

// newEnsemble starts the group's history again at e, a snapshot from a new
// ensemble: the tenure held until then ended unseen, and the terms and
// zxids before no longer order against the ones to come. Its snapshot
// carries the gap mark that says owners may be missing in between.
func (t *tenures) newEnsemble() {
	unseenEnd(t.cur)
	t.cur, t.last, t.missing, t.gapNext = nil, nil, nil, false
	t.byTerm = map[int64]*row{}
	t.maxZxid, t.maxTerm = 0, 0
	t.era++
}

func (t *tenures) newRow(e publish.Event, p *publish.Participant) *row {
	r := &row{Tenure: Tenure{Group: e.Group, Recipe: e.Recipe, Term: e.Term, TwoOwners: e.Hazard != ""}, order: e.Term, era: t.era}
	if p != nil {
		r.Owner = *p
	}
	t.byTerm[e.Term] = r
	t.rows = append(t.rows, r)
	t.maxTerm = max(t.maxTerm, e.Term)
	return r
}

// unseenEnd closes r at a moment nobody observed.
func unseenEnd(r *row) {
	if r != nil && !r.ended {
		r.ended, r.UntilSeen, r.Reason = true, false, ""
	}
}

// gapRow marks the stretch before e, an event with the gap flag that
// leaves the group without an owner: owners may have come and gone there
// unseen. A row of its own, so the mark stays when no later tenure
// follows; the next event of the group then follows an observed empty
// group, and the next tenure carries no gap for it. prev, the Missing row
// of the event just before, is extended instead when there is one.
func (t *tenures) gapRow(e publish.Event, prev *row, since time.Time) *row {
	if prev != nil {
		prev.Until = e.Time
		return prev
	}
	r := &row{Tenure: Tenure{Group: e.Group, Recipe: e.Recipe, Missing: true, Gap: true, Until: e.Time, UntilSeen: true},
		ended: true, order: max(e.Zxid, t.maxTerm), era: t.era}
	if !since.IsZero() && !since.After(e.Time) {
		r.From, r.FromSeen = since, true
	}
	t.rows = append(t.rows, r)
	return r
}

// restatedAcrossAGap reports whether e names an owner no session holds
// (Kafka's persistent KRaft /controller, written again at each election)
// after a stretch nobody observed: its term, the node's creation, proves
// no unbroken hold, as an ephemeral node's does, so the tenure it restates
// may have been another's meanwhile (and its holder's again).
func restatedAcrossAGap(e publish.Event) bool {
	return e.Gap && e.Snapshot && e.Owner != nil && e.Owner.Session == "" && e.Type.Gains()
}

// gain: e says an owner holds (after gains more of the group's events).
func (t *tenures) gain(e publish.Event, after bool) {
	r := t.byTerm[e.Term]
	if r != nil && !r.ended && restatedAcrossAGap(e) {
		// Its row ends unseen where it was last seen, and the owner
		// holds again from here, after a gap, as a row of its own.
		unseenEnd(r)
		r = nil
	}
	switch {
	case r == nil || (r.ended && r.UntilSeen):
		// New, or the same node owning again after its seen end.
		r = t.newRow(e, e.Owner)
		r.From, r.FromSeen = e.Time, seenAt(e)
		r.Gap = e.Gap || t.gapNext ||
			(e.Snapshot && after) || // first seen after a stretch nobody observed
			// A previous owner no row shows: another than the last seen,
			// or one held before the first event read (a log whose older
			// part is gone), whose tenure the history would otherwise
			// leave out without a mark.
			(e.Previous != nil && (t.last == nil || e.Previous.Node != t.last.Owner.Node))
		r.see(e.Time)
	case r.From.IsZero() || (!e.Snapshot && !r.FromSeen && !e.Time.After(r.From)):
		r.From, r.FromSeen = e.Time, seenAt(e)
	}
	if r.ended && (t.cur == nil || t.cur.Term <= r.Term) {
		// Its end was only inferred, and here it holds: not ended.
		r.ended = false
	}
	r.Owner = *e.Owner
	if cur := t.cur; cur != nil && cur != r && cur.Term <= r.Term {
		if !e.Snapshot && e.Previous != nil && e.Previous.Node == cur.Owner.Node && !cur.ended {
			// Seen replaced, without a loss event of its own.
			cur.Until, cur.UntilSeen, cur.Reason, cur.ended = e.Time, true, elect.ReasonUnknown, true
			cur.late(e)
		} else {
			unseenEnd(cur)
			r.Gap = true
		}
	}
	t.gapNext = false
	if t.cur == nil || t.cur.Term <= r.Term {
		t.cur, t.last = r, r
	}
}

// ready: e says its owner finished its leader procedure.
func (t *tenures) ready(e publish.Event) {
	if r := t.byTerm[e.Term]; r != nil {
		if r.Ready.IsZero() {
			r.Ready = e.Time
		}
		return
	}
	// Its election was never seen (a log whose older part is gone, say):
	// the ready proves it held then, and it is the current tenure, which
	// a later owner ends like any other.
	t.unseenStart(e, true).Ready = e.Time
}

// unseenStart makes the row of e's owner, whose start no event showed:
// it held at e's time, and is the current tenure from then on unless a
// later term is (gap: owners may be hidden before it).
func (t *tenures) unseenStart(e publish.Event, gap bool) *row {
	r := t.newRow(e, e.Owner)
	r.Gap = gap
	r.From, r.FromSeen = e.Time, false
	r.see(e.Time)
	if t.cur == nil || t.cur.Term <= r.Term {
		unseenEnd(t.cur)
		t.cur, t.last = r, r
	}
	return r
}

// named: e, an event of another kind (a candidate's), names the owner
// holding at its time. An owner no gain, ready or loss showed (its gain
// dropped by the stream's age limit, a log whose older part is gone) is
// current from then on, its start not seen, as for ready: not left out of
// the history while who names it. It may follow owners nobody saw when
// other events of the group came before it (after).
func (t *tenures) named(e publish.Event, after bool) {
	if t.byTerm[e.Term] == nil {
		t.unseenStart(e, after || e.Gap)
	}
}

// nobody: e, a snapshot, says "nobody owns the group at zxid e.Zxid". The
// open tenure, if older, ended unseen. Whether someone came and went
// unseen since the events before, the event says: its bridge measured the
// group against its last report. But when the events before it, with no
// owner left, already reach its zxid (upTo: another bridge's log merged
// in, or changes of the queue this log saw after the bridge's last
// report), every change up to it was observed: nothing is missing.
func (t *tenures) nobody(e publish.Event, since time.Time, upTo int64, prevMissing *row) {
	observedUpTo := e.Zxid > 0 && e.Zxid <= upTo && (t.cur == nil || t.cur.ended)
	if t.cur != nil && !t.cur.ended && e.Zxid >= t.cur.Term {
		unseenEnd(t.cur)
		t.cur = nil
	}
	if e.Gap && !observedUpTo {
		t.missing = t.gapRow(e, prevMissing, since)
	}
}

// loss: e says the owner of its term let go, or was seen gone.
func (t *tenures) loss(e publish.Event, since time.Time) {
	r := t.byTerm[e.Term]
	if r == nil {
		r = t.newRow(e, e.Previous)
		r.Gap = true // its start was never seen
	}
	if t.cur != nil && t.cur != r && t.cur.Term < r.Term {
		// A later tenure ends: the one held before it ended unseen, and
		// r's gap says so; the owner after r follows r, which was seen,
		// and carries no gap for it.
		unseenEnd(t.cur)
		t.cur = nil
	}
	switch {
	case !r.ended || !r.UntilSeen:
		r.Until, r.Reason, r.ended = e.Time, e.Reason, true
		r.UntilSeen = !e.Snapshot
		if e.Snapshot {
			r.Reason = ""
		}
		r.late(e)
	case r.Reason == elect.ReasonUnknown && seenAt(e) && e.Reason != "" && e.Reason != elect.ReasonUnknown:
		// Seen replaced first (the next owner's gain came before this
		// loss: a runner announcing its own release), and now its end
		// with the reason: that is when and why.
		r.Reason = e.Reason
		if e.Time.Before(r.Until) {
			r.Until = e.Time
		}
	}
	if t.cur == r {
		t.cur = nil
	}
	if t.last == nil || t.last.Term <= r.Term {
		// A late loss of an older tenure (read after its successor's
		// gain) leaves the latest tenure the last.
		t.last = r
	}
	switch {
	case e.Gap && e.Owner == nil:
		// Nobody owns after it: the stretch before it may hide owners.
		t.missing = t.gapRow(e, nil, since)
	case e.Gap:
		t.gapNext = true // the new owner's gain follows, and says so too
	}
}

// result is the group's tenures in order: by term, a Missing row after
// the tenures known before it. An end nobody saw is the last sighting.
func (t *tenures) result() []Tenure {
	rows := t.rows
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		switch {
		case a.era != b.era:
			return a.era < b.era
		case a.order != b.order:
			return a.order < b.order
		case a.Missing != b.Missing:
			return b.Missing
		}
		return a.From.Before(b.From)
	})
	out := make([]Tenure, len(rows))
	for i, r := range rows {
		if r.ended && !r.UntilSeen {
			r.Until = r.LastSeen
		}
		switch {
		case r.Missing, r.From.IsZero():
		case !r.Until.IsZero():
			r.HeldFor = r.Until.Sub(r.From)
		case !r.LastSeen.IsZero():
			r.HeldFor = r.LastSeen.Sub(r.From)
		}
		if r.HeldFor < 0 {
			// Its ends were dated by clocks that disagree: a length
			// below zero is no length, and no exact one.
			r.HeldFor, r.ClocksDisagree = 0, true
		}
		out[i] = r.Tenure
	}
	return out
}
