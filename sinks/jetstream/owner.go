package jetstream

import (
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// Owner is the value herald keeps in the owners bucket under a group's
// tokens: who owns the group now. A group with no owner has no key (its
// last entry is a delete marker).
type Owner struct {
	Group  string              `json:"group"`
	Recipe elect.Recipe        `json:"recipe"`
	Owner  publish.Participant `json:"owner"`
	// Term is the owner node's czxid, the fencing token.
	Term int64 `json:"term"`
	// Epoch is the system's own leadership epoch for this owner, where it
	// keeps one (Kafka's controller epoch; publish.Event.Epoch), 0 when
	// unknown. A bridge restarted on the bucket counts the elections
	// since by it.
	Epoch int64 `json:"epoch,omitempty"`
	// Zxid is the zxid of the last change recorded here.
	Zxid int64 `json:"zxid"`
	// Since is when the owner was first reported.
	Since time.Time `json:"since"`
	// SinceUnseen says the owner was first reported by a snapshot (a
	// bridge's start, a takeover, a reconnect): its tenure began before
	// Since, unseen, and Since bounds it from above only.
	SinceUnseen bool `json:"since_unseen,omitempty"`
	// Ready is true once a leader acknowledged taking office.
	Ready bool `json:"ready"`
	// EventID is the id of the last event that changed this value.
	EventID string `json:"event_id"`
	// Source is the bridge that wrote the value last: the one whose
	// heartbeats (bucket herald_bridges) say whether it is still
	// confirmed. A bridge taking over re-states the value under its name.
	Source string `json:"source,omitempty"`
	// Hazard, when set, says why another client of the group may believe
	// it owns beside Owner (publish.Event.Hazard): the value is written
	// again when a client that cannot read the others' nodes joins or
	// leaves, though the owner stays.
	Hazard string `json:"hazard,omitempty"`
	// Note is what to know of the owner beyond its name
	// (publish.Event.Note): for Kafka's persistent /controller, that it
	// may name a past controller.
	Note string `json:"note,omitempty"`
	// NewEnsemble says the owner was first reported from a ZooKeeper
	// ensemble other than the one the group's earlier values came from
	// (publish.Event.NewEnsemble): its term may be below theirs, and it
	// still replaces them.
	NewEnsemble bool `json:"new_ensemble,omitempty"`
}

// vacancy is the body herald gives a delete marker (a group with no owner),
// which KV watchers see as the entry's value: the bridge that said so (its
// heartbeats confirm it) and the highest term known to be gone (also in the
// HeaderTerm header).
type vacancy struct {
	Source string `json:"source,omitempty"`
	Term   int64  `json:"term"`
	// Zxid is the zxid of the change that left the group without an
	// owner (0 in markers written before herald recorded it).
	Zxid int64 `json:"zxid,omitempty"`
	// Recipe is what the group held (absent in markers written before
	// herald recorded it).
	Recipe elect.Recipe `json:"recipe,omitempty"`
	// Epoch is the system's leadership epoch when the group was left
	// without an owner (its last election's), 0 when unknown.
	Epoch int64 `json:"epoch,omitempty"`
	// Note is why nobody holds the group, when its event said
	// (publish.Event.Note: a node at a leader's path not taken for a
	// leader's).
	Note string `json:"note,omitempty"`
}

// view is what the bucket says about one group: an owner, or none; when
// none, guard is the highest term known to be gone (from the delete marker)
// so that a late event for that owner cannot bring it back, and source the
// bridge that wrote the marker, and zxid the change that emptied it.
// written says the key has an entry.
type view struct {
	owner   *Owner
	guard   int64
	source  string
	zxid    int64
	written bool
	// recipe is the group's, with no owner (an owner records its own),
	// and epoch the system's epoch as of zxid (0 when unknown).
	recipe elect.Recipe
	epoch  int64
	// note is why nobody holds the group (vacancy.Note).
	note string
}

// step applies one event to a view and returns the next view. It never
// lets a lower term replace a higher one, and within one term it only adds
// (ready stays ready, since keeps the first time).
func step(v view, e publish.Event) view {
	if e.Restarts() {
		// A new ensemble: the terms before it do not order against its.
		v = view{written: v.written}
		if e.Type.Loses() && e.Owner == nil {
			return view{guard: max(e.Term, e.Zxid), source: e.Source, zxid: e.Zxid, written: true, recipe: e.Recipe, epoch: e.Epoch, note: e.Note}
		}
	}
	switch {
	case e.Type.Gains() || e.Type == publish.LeaderReady:
		if e.Owner == nil {
			return v
		}
		next := &Owner{
			Group: e.Group, Recipe: e.Recipe, Owner: *e.Owner, Term: e.Term, Epoch: e.Epoch, Zxid: e.Zxid,
			Since: e.Time, SinceUnseen: e.Snapshot || e.NotBefore != nil, Ready: e.Type == publish.LeaderReady, EventID: e.ID, Source: e.Source, Hazard: e.Hazard, Note: e.Note,
			NewEnsemble: e.NewEnsemble,
		}
		switch {
		case v.owner == nil && e.Term <= v.guard:
			return v // the owner of this term is already gone
		case v.owner == nil || e.Term > v.owner.Term:
			return view{owner: next, written: true}
		case e.Term < v.owner.Term:
			return v // stale
		}
		if !next.Ready || v.owner.Ready {
			// Same term, nothing new but perhaps the hazard: a snapshot
			// re-reporting it. From another bridge (a takeover), it now
			// confirms the value.
			cur, changed := restated(*v.owner, e)
			if e.Source != "" && e.Source != v.owner.Source {
				cur.Source, changed = e.Source, true
			}
			if changed {
				return view{owner: &cur, written: true}
			}
			return v
		}
		cur, _ := restated(*v.owner, e) // same term, now ready
		cur.Ready, cur.EventID, cur.Source, cur.Zxid = true, e.ID, e.Source, max(cur.Zxid, e.Zxid)
		return view{owner: &cur}
	case e.Type.Loses() && e.Owner == nil:
		return stepNoOwner(v, e)
	}
	// A loss with a successor: the gain that follows records it. Candidate
	// events do not change the owner, but may say the hazard changed.
	if v.owner != nil && e.Owner != nil && e.Owner.Node == v.owner.Owner.Node && e.Term == v.owner.Term {
		if cur, changed := restated(*v.owner, e); changed {
			return view{owner: &cur, written: true}
		}
	}
	return v
}

// stepNoOwner applies e, an event leaving the group without an owner.
// No successor: a real loss names the owner that went (its term); a
// snapshot of an empty group names none, and then every owner created
// before the snapshot's zxid is gone.
func stepNoOwner(v view, e publish.Event) view {
	guard := e.Term
	if e.Previous == nil {
		guard = max(e.Term, e.Zxid)
	}
	if v.owner != nil && v.owner.Term <= guard {
		return view{guard: guard, source: e.Source, zxid: e.Zxid, written: true, recipe: e.Recipe, epoch: e.Epoch, note: e.Note}
	}
	if v.owner == nil && e.Note != v.note && e.Zxid >= v.zxid {
		// Still no owner (or none written yet), but why changed: a node
		// not taken for a leader's appeared or went. Readers say why.
		return view{guard: max(v.guard, guard), source: e.Source, zxid: e.Zxid, written: true, recipe: e.Recipe, epoch: e.Epoch, note: e.Note}
	}
	if v.owner == nil && v.written && e.Source != "" && e.Source != v.source {
		// Still no owner, now reported by another bridge (a takeover): it
		// confirms the marker from now on. The epoch stays the one of the
		// newer zxid it is kept with.
		epoch := v.epoch
		if e.Zxid >= v.zxid {
			epoch = e.Epoch
		}
		return view{guard: max(v.guard, guard), source: e.Source, zxid: max(v.zxid, e.Zxid), written: true, recipe: e.Recipe, epoch: epoch, note: v.note}
	}
	return v
}

// restated is o with the hazard e reports about o's tenure, when e is no
// older than what o records; changed says the hazard differs.
func restated(o Owner, e publish.Event) (Owner, bool) {
	if !e.HazardNews(o.Zxid, o.Hazard) {
		return o, false
	}
	o.Hazard, o.Zxid, o.EventID = e.Hazard, e.Zxid, e.ID
	return o, true
}

// same reports whether two views would be written identically.
func same(a, b view) bool {
	switch {
	case a.owner == nil || b.owner == nil:
		return a.owner == nil && b.owner == nil && a.source == b.source && a.note == b.note
	}
	x, y := *a.owner, *b.owner
	if !x.Since.Equal(y.Since) {
		return false
	}
	x.Since, y.Since = time.Time{}, time.Time{} // compared above; == would compare locations
	return x == y
}
