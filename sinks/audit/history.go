package audit

import (
	"sort"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// Tenure is one owner's hold of a group: one row of `herald history`.
type Tenure struct {
	Group  string
	Recipe elect.Recipe
	// Term is the owner node's czxid, the fencing token.
	Term  int64
	Owner publish.Participant
	// From is when the owner was elected or acquired the lock; zero when
	// no such event was seen (the tenure is known only from its end).
	From time.Time
	// Ready is when a leader reported it had taken office; zero if never.
	Ready time.Time
	// Until is when the tenure ended; zero while it is still held as far
	// as the events tell.
	Until time.Time
	// HeldFor is Until-From when both are known, else zero.
	HeldFor time.Duration
	// Reason says why it ended: the lost/released event's reason, or
	// elect.ReasonUnknown when a later owner appeared without one.
	Reason elect.Reason
	// Gap is true when an owner may be hidden between the previous row of
	// the group and this one: an event carried the gap flag, the new
	// owner's predecessor is not the owner last seen, or the tenure's
	// start was never seen.
	Gap bool
}

// Open reports whether the tenure has not ended as far as the events tell.
func (t Tenure) Open() bool { return t.Until.IsZero() }

// History turns events from any source into tenures, sorted by group and
// term. Duplicates (same id, as at-least-once delivery and snapshots
// produce) count once; candidate events are ignored.
func History(events []publish.Event) []Tenure {
	seen := map[string]bool{}
	byGroup := map[string][]publish.Event{}
	for _, e := range events {
		if e.ID != "" && seen[e.ID] {
			continue
		}
		seen[e.ID] = true
		byGroup[e.Group] = append(byGroup[e.Group], e)
	}
	var out []Tenure
	for _, evs := range byGroup {
		out = append(out, groupHistory(evs)...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Term < out[j].Term
	})
	return out
}

// groupHistory builds the tenures of one group from its events in order.
func groupHistory(evs []publish.Event) []Tenure {
	var ts []*Tenure
	byTerm := map[int64]*Tenure{}
	var cur *Tenure // the open tenure, if any
	gapNext := false
	get := func(e publish.Event, p *publish.Participant) (*Tenure, bool) {
		if t := byTerm[e.Term]; t != nil {
			return t, false
		}
		t := &Tenure{Group: e.Group, Recipe: e.Recipe, Term: e.Term}
		if p != nil {
			t.Owner = *p
		}
		byTerm[e.Term] = t
		ts = append(ts, t)
		return t, true
	}
	for _, e := range evs {
		switch {
		case e.Type.Gains():
			t, isNew := get(e, e.Owner)
			if !isNew && !t.From.IsZero() {
				continue
			}
			t.From = e.Time
			t.Owner = *e.Owner
			t.Gap = t.Gap || e.Gap || gapNext
			if e.Previous != nil && cur != nil && e.Previous.Node != cur.Owner.Node {
				t.Gap = true // an owner we never saw came in between
			}
			if cur != nil && cur != t && cur.Term < t.Term && cur.Open() {
				cur.Until, cur.Reason = e.Time, elect.ReasonUnknown
			}
			gapNext = false
			if cur == nil || cur.Term <= t.Term {
				cur = t
			}
		case e.Type == publish.LeaderReady:
			t, isNew := get(e, e.Owner)
			if isNew {
				t.Gap = true // elected never seen
			}
			if t.Ready.IsZero() {
				t.Ready = e.Time
			}
		case e.Type.Loses() && e.Previous == nil:
			// A snapshot saying nobody owns the group (at zxid e.Zxid): no
			// tenure of its own; it ends the open one if that is older.
			if cur != nil && cur.Open() && e.Zxid >= cur.Term {
				cur.Until, cur.Reason = e.Time, elect.ReasonUnknown
				cur = nil
			}
		case e.Type.Loses():
			t, isNew := get(e, e.Previous)
			if isNew {
				t.Gap = true
			}
			if t.Open() {
				t.Until, t.Reason = e.Time, e.Reason
			}
			gapNext = gapNext || e.Gap
			if cur == t {
				cur = nil
			}
		}
	}
	out := make([]Tenure, len(ts))
	for i, t := range ts {
		if !t.From.IsZero() && !t.Until.IsZero() {
			t.HeldFor = t.Until.Sub(t.From)
		}
		out[i] = *t
	}
	return out
}
