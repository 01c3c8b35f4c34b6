package publish

import (
	"time"

	"github.com/zkherald/herald/elect"
)

// Translate turns one observed change into the events herald publishes for
// it, in the order a consumer must apply them. Every event carries the
// change's recipe, zxid and gap flag, the given source and time, and its
// deterministic id (WithID), so re-observing the same change yields the
// same ids; a snapshot's owner event is the source's sighting (WithID).
//
// A Snapshot becomes, in this order:
//   - the owner event (leader.elected or lock.acquired, Snapshot=true);
//   - leader.ready, for an election whose owner has acknowledged;
//   - candidate.joined (Snapshot=true) for every other node in the queue.
//
// A snapshot of a group with no owner becomes one leader.lost or
// lock.released with Previous=nil, Reason "unknown" and Term 0: a consumer
// keeping an owners view clears the group when it sees it (Follower does
// so when the event's Zxid is at least the term of the owner it holds, that
// is, when the snapshot was taken after that owner's node was created).
//
// A change the observer may have seen late (its process stalled) carries
// its NotBefore on every event.
//
// A snapshot after a stretch the observer did not see names the owner it
// last reported, when that owner went meanwhile, in LastSeen (elect.Change
// Before and BeforeHeld).
//
// An OwnerChanged becomes a loss for Previous (Term = the previous owner's
// term, Owner = the new owner, if any) followed by a gain for Owner. Ready
// becomes leader.ready, Joined and Left become candidate.joined and
// candidate.left, and Unknown becomes nothing: the next Snapshot tells.
func Translate(c elect.Change, source string, now time.Time) []Event {
	base := baseOf(c, source, now)
	gain, loss := GainOf(c.Recipe), LossOf(c.Recipe)
	owner := FromElect(c.Owner)
	var out []Event
	add := func(e Event) { out = append(out, e.WithID()) }

	switch c.Kind {
	case elect.Snapshot:
		snapshotEvents(c, base, owner, add)
	case elect.OwnerChanged:
		if c.Previous != nil {
			e := base
			e.Type, e.Previous, e.Owner, e.Term = loss, FromElect(c.Previous), owner, c.Previous.Czxid
			e.Reason = c.Reason
			if e.Reason == elect.ReasonNone {
				e.Reason = elect.ReasonUnknown
			}
			add(e)
		}
		if owner != nil {
			e := base
			e.Type, e.Owner, e.Previous, e.Term = gain, owner, FromElect(c.Previous), c.OwnerTerm()
			add(e)
		}
	case elect.Ready:
		if owner != nil {
			e := base
			e.Type, e.Owner, e.Term = LeaderReady, owner, c.OwnerTerm()
			add(e)
		}
	case elect.Joined, elect.Left:
		if c.Candidate != nil {
			e := base
			e.Type, e.Owner, e.Candidate, e.Term = CandidateJoined, owner, FromElect(c.Candidate), c.OwnerTerm()
			if c.Kind == elect.Left {
				e.Type, e.Reason = CandidateLeft, c.Reason
			}
			add(e)
		}
	}
	return out
}

// baseOf is what every event translated from c carries.
func baseOf(c elect.Change, source string, now time.Time) Event {
	base := Event{
		Group:  c.Group,
		Recipe: c.Recipe,
		Epoch:  c.Epoch,
		Zxid:   c.Zxid,
		Gap:    c.Gap,
		Hazard: c.Hazard,
		Note:   c.Note,
		Time:   now,
		Source: source,

		groupCzxid: c.GroupCzxid,
	}
	if !c.NotBefore.IsZero() {
		nb := c.NotBefore.UTC()
		base.NotBefore = &nb
	}
	return base
}

// snapshotEvents adds the events of a snapshot: the owner (or its absence)
// as it is, the leader ready when it acknowledged, and every candidate.
func snapshotEvents(c elect.Change, base Event, owner *Participant, add func(Event)) {
	gain, loss := GainOf(c.Recipe), LossOf(c.Recipe)
	if owner == nil {
		e := base
		e.Type, e.Reason, e.Snapshot, e.LastSeen = loss, elect.ReasonUnknown, true, sightingOf(c)
		add(e)
	} else {
		e := base
		e.Type, e.Owner, e.Term, e.Snapshot, e.LastSeen = gain, owner, c.OwnerTerm(), true, sightingOf(c)
		add(e)
		if c.Ready && c.Recipe == elect.RecipeElection {
			r := base
			r.Type, r.Owner, r.Term, r.Snapshot = LeaderReady, owner, c.OwnerTerm(), true
			add(r)
		}
	}
	for i := range c.Queue {
		q := c.Queue[i]
		if c.Owner != nil && q.Node == c.Owner.Node {
			continue
		}
		e := base
		e.Type, e.Owner, e.Candidate, e.Term, e.Snapshot = CandidateJoined, owner, FromElect(&q), c.OwnerTerm(), true
		add(e)
	}
}
