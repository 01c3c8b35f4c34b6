package publish

import (
	"slices"
	"time"

	"github.com/zkherald/herald/elect"
)

// current is every group's state as the events given to Publish leave it:
// what a sink whose store of current state was lost is told again (see
// StateKeeper). Each group holds its owner, whether the owner is ready,
// its other candidates and what a snapshot's events carry besides, so
// that its snapshot events are the ones Translate makes of a Snapshot of
// the same state, ids included.
type current map[string]*heldState

type heldState struct {
	recipe     elect.Recipe
	owner      *Participant
	since      time.Time // when the owner's event said it owned: its tenure's start as seen
	term       int64
	ready      bool
	candidates []Participant // in the order they joined, never the owner
	zxid       int64         // the newest zxid seen
	epoch      int64
	hazard     string
	note       string // the owner's (Event.Note), or why nobody owns
	source     string
	groupCzxid int64
	// ownerless is, while there is no owner, when the group was seen to
	// become ownerless: the time of the loss that left it without one (or
	// of the first event that showed it so). A later event restating that
	// nobody owns keeps it, as since is kept for an owner.
	ownerless time.Time
}

// apply folds e into its group's state.
func (c current) apply(e Event) {
	g := c[e.Group]
	if g == nil {
		g = &heldState{}
		c[e.Group] = g
	}
	g.recipe, g.epoch, g.hazard, g.source = e.Recipe, e.Epoch, e.Hazard, e.Source
	g.zxid = max(g.zxid, e.Zxid)
	if e.Restarts() {
		g.zxid = e.Zxid // the old ensemble's zxids do not count
	}
	if e.groupCzxid != 0 {
		g.groupCzxid = e.groupCzxid
	}
	if e.Snapshot && (e.Type.Gains() || e.Type.Loses()) {
		// A snapshot's owner event comes first and its candidates follow:
		// it states the whole group afresh.
		g.candidates, g.ready = nil, false
	}
	switch {
	case e.Type.Gains():
		o := *e.Owner
		if g.owner == nil || g.owner.Node != o.Node || g.term != e.Term {
			g.since = e.Time // a new tenure; the same one re-stated keeps its start
		}
		g.owner, g.term, g.ready, g.note = &o, e.Term, false, e.Note
		g.ownerless = time.Time{}
		g.drop(o.Node)
	case e.Type.Loses():
		g.ready = false
		if e.Owner == nil { // no successor: nobody owns (a gain follows one)
			if g.owner != nil || g.ownerless.IsZero() {
				g.ownerless = e.Time // it lost its owner now; nobody owning again keeps the time
			}
			g.owner, g.term, g.note = nil, 0, e.Note // why nobody holds it, when known
		}
	case e.Type == LeaderReady:
		if g.owner != nil && e.Owner != nil && e.Owner.Node == g.owner.Node {
			g.ready = true
		}
	case e.Type == CandidateJoined && e.Candidate != nil:
		if g.owner == nil || e.Candidate.Node != g.owner.Node {
			g.drop(e.Candidate.Node)
			g.candidates = append(g.candidates, *e.Candidate)
		}
	case e.Type == CandidateLeft && e.Candidate != nil:
		g.drop(e.Candidate.Node)
	}
}

func (g *heldState) drop(node string) {
	g.candidates = slices.DeleteFunc(g.candidates, func(p Participant) bool { return p.Node == node })
}

// snapshot returns the events Translate makes of a Snapshot of the group's
// state, without Gap, stamped now, but for the owner's event, stamped with
// its tenure's start (since), and the event saying nobody owns, stamped
// with when the group became ownerless. The time is no part of an event's
// id: the ids are those of a snapshot of the same state.
func (g *heldState) snapshot(group string, now time.Time) []Event {
	base := Event{
		Group: group, Recipe: g.recipe, Epoch: g.epoch, Zxid: g.zxid, Hazard: g.hazard, Note: g.note,
		Snapshot: true, Time: now, Source: g.source, groupCzxid: g.groupCzxid,
	}
	var out []Event
	var owner *Participant
	if g.owner == nil {
		e := base
		e.Type, e.Reason = LossOf(g.recipe), elect.ReasonUnknown
		if !g.ownerless.IsZero() {
			e.Time = g.ownerless // the store's "no owner since" stays the loss's, not the restatement's
		}
		out = append(out, e.WithID())
	} else {
		o := *g.owner
		owner = &o
		e := base
		e.Type, e.Owner, e.Term = GainOf(g.recipe), owner, g.term
		if !g.since.IsZero() {
			e.Time = g.since // the store's "since" stays the tenure's, not the restatement's
		}
		out = append(out, e.WithID())
		if g.ready && g.recipe == elect.RecipeElection {
			r := base
			r.Type, r.Owner, r.Term = LeaderReady, owner, g.term
			out = append(out, r.WithID())
		}
	}
	for i := range g.candidates {
		q := g.candidates[i]
		e := base
		e.Type, e.Owner, e.Candidate, e.Term = CandidateJoined, owner, &q, g.term
		out = append(out, e.WithID())
	}
	return out
}
