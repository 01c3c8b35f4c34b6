package publish

import (
	"fmt"
	"sync"
	"time"

	"github.com/zkherald/herald/elect"
)

// DefaultDedupSize is how many recent event ids a Follower remembers.
const DefaultDedupSize = 65536

// Verdict is what a Follower made of an event.
type Verdict int

const (
	// Applied: the event is new and the consumer should act on it.
	Applied Verdict = iota
	// Duplicate: an event with this id was seen recently.
	Duplicate
	// Stale: the event is about a term older than what the group is known
	// to have reached (a late or replayed event).
	Stale
	// Unchanged: new id, but it tells nothing the follower did not know
	// (the same owner again, a ready already known, a loss already known).
	Unchanged
	// Invalid: the event fails Validate.
	Invalid
)

func (v Verdict) String() string {
	switch v {
	case Applied:
		return "applied"
	case Duplicate:
		return "duplicate"
	case Stale:
		return "stale"
	case Unchanged:
		return "unchanged"
	case Invalid:
		return "invalid"
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// OwnerState is what a Follower knows of one group.
type OwnerState struct {
	Group  string
	Recipe elect.Recipe
	// Owner is the current owner, nil when the group has none.
	Owner *Participant
	// Term is the highest term the group is known to have reached: the
	// current owner's when there is one, else the last owner's.
	Term int64
	// Zxid is the zxid of the last owner event applied.
	Zxid  int64
	Ready bool
	// Gap is true when the last owner event applied had Gap set: some
	// intermediate owners may never have been seen.
	Gap bool
	// Hazard is what the group's latest event said about the current
	// owner's tenure: why another client may believe it owns beside it
	// (Event.Hazard), "" when none may.
	Hazard string
	// Note is what the latest owner event said beyond the owner's name
	// (Event.Note): with no owner, why a node at a leader's path is not
	// taken for a leader's.
	Note string
	// Freshness says whether a bridge that reported the current state
	// (its owner, or that it has none) still confirms it, from the
	// heartbeats given to Heartbeat; filled in by Current and Freshness.
	Freshness
}

// maxSources bounds how many bridges a group remembers as reporters of its
// current state (the last ones).
const maxSources = 4

// groupState is a group's state and the bridges that reported it: the
// source of the event that set it, and of every later event that re-states
// it (a duplicate or an unchanged report, say a takeover's snapshot).
type groupState struct {
	OwnerState
	sources []string
}

func (g *groupState) reported(source string) {
	if source == "" {
		return
	}
	for i, s := range g.sources {
		if s == source {
			g.sources = append(g.sources[:i], g.sources[i+1:]...)
			break
		}
	}
	if len(g.sources) == maxSources {
		g.sources = g.sources[1:]
	}
	g.sources = append(g.sources, source)
}

// restates reports whether e (already seen, or judged Unchanged) describes
// the group's current state: its owner's term, or no owner.
func (g *groupState) restates(e Event) bool {
	switch {
	case e.Type.Gains() || e.Type == LeaderReady:
		return g.Owner != nil && e.Term == g.Term && e.Owner != nil && (e.Term != 0 || e.Owner.Node == g.Owner.Node)
	case e.Type.Loses():
		if g.Owner != nil || e.Owner != nil {
			return false
		}
		return e.Term == g.Term || e.Previous == nil && e.Zxid >= g.Term
	}
	return true // a candidate event: its source observes the group
}

// Follower is the consumer-side core, independent of any transport: feed
// it decoded events in the order a transport delivers them and it tells
// which are new, dropping duplicates (by id, within a bounded memory) and
// stale events (older terms), and keeps the current owner of every group.
// It is safe for concurrent use.
type Follower struct {
	mu      sync.Mutex
	seen    *idSet
	groups  map[string]*groupState
	bridges *Bridges
}

// FollowerOption configures a Follower.
type FollowerOption func(*Follower) error

// WithDedupSize sets how many recent ids the follower remembers (default
// 65,536). Size it above the number of events a transport may redeliver.
func WithDedupSize(n int) FollowerOption {
	return func(f *Follower) error {
		if n < 1 {
			return fmt.Errorf("%w: dedup size %d: give at least 1", ErrBadOption, n)
		}
		f.seen = newIDSet(n)
		return nil
	}
}

// NewFollower returns a follower that knows no group yet.
func NewFollower(opts ...FollowerOption) (*Follower, error) {
	f := &Follower{seen: newIDSet(DefaultDedupSize), groups: map[string]*groupState{}, bridges: NewBridges()}
	for _, o := range opts {
		if err := o(f); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Apply reports whether e is new and was applied: act on the event only
// when it returns true.
func (f *Follower) Apply(e Event) bool { return f.Judge(e) == Applied }

// Judge is Apply with the reason: why an event was or was not applied.
func (f *Follower) Judge(e Event) Verdict {
	if e.Validate() != nil {
		return Invalid
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.groups[e.Group]
	if f.seen.add(e.ID) {
		if g != nil && g.restates(e) {
			g.reported(e.Source)
		}
		return Duplicate
	}
	fresh := g == nil || e.Restarts()
	if fresh {
		// A new ensemble's snapshot states the group afresh too.
		g = &groupState{OwnerState: OwnerState{Group: e.Group, Recipe: e.Recipe}}
		f.groups[e.Group] = g
	}
	v := g.apply(e)
	if fresh && v == Unchanged && e.Type.Loses() && e.Owner == nil && e.Previous == nil {
		// The first word of a group is news, "nobody owns it" too: a
		// reader shows the group rather than nothing.
		g.Zxid, v = e.Zxid, Applied
	}
	switch {
	case v == Applied && (e.Type.Gains() || e.Type.Loses() || e.Type == LeaderReady):
		g.sources = g.sources[:0]
		g.reported(e.Source)
	case v == Applied || v == Unchanged && g.restates(e):
		g.reported(e.Source)
	}
	return v
}

// Heartbeat records a bridge's heartbeat (see Heartbeat and Bridges) and
// reports whether it changed what the follower knows; Freshness and
// Current judge the groups with it.
func (f *Follower) Heartbeat(h Heartbeat) bool { return f.bridges.Put(h) }

// Bridges is the follower's table of heartbeats.
func (f *Follower) Bridges() *Bridges { return f.bridges }

// Freshness judges, at now, whether a bridge that reported group's current
// state still confirms it. A group the follower has not seen has no owner
// as far as it knows, which is fresh only while a bridge that observes the
// group confirms (Bridges.JudgeAbsent).
func (f *Follower) Freshness(group string, now time.Time) Freshness {
	f.mu.Lock()
	var sources []string
	owned := false
	if g := f.groups[group]; g != nil {
		sources = append(sources, g.sources...)
		owned = g.Owner != nil
	}
	f.mu.Unlock()
	switch {
	case len(sources) == 0 && owned:
		return f.bridges.JudgeUnsigned(now, group) // its events name no bridge
	case len(sources) == 0:
		return f.bridges.JudgeAbsent(now, group) // nothing of the group was seen
	}
	return f.bridges.JudgeGroup(now, group, sources...)
}

// apply decides by term, the fencing token that only grows in a group.
func (g *OwnerState) apply(e Event) Verdict {
	switch {
	case e.Type.Gains():
		switch {
		case e.Term < g.Term:
			return Stale
		case e.Term == g.Term && g.Term != 0:
			if g.Owner == nil {
				return Stale // this term already ended
			}
			return g.restate(e)
		case e.Term == 0 && g.Owner != nil && e.Zxid < g.Zxid:
			return Stale // terms unknown: fall back to zxid order
		}
		if g.Owner != nil && e.Term == g.Term && g.Owner.Node == e.Owner.Node {
			return Unchanged // terms unknown (0), same owner
		}
		g.setOwner(e)
		return Applied
	case e.Type == LeaderReady:
		switch {
		case e.Term < g.Term || e.Term == g.Term && g.Owner == nil && g.Term != 0:
			return Stale
		case e.Term == g.Term && g.Owner != nil:
			if g.Ready {
				return g.restate(e)
			}
			g.Ready = true
			g.restate(e)
			return Applied
		case e.Owner == nil:
			return Stale // a newer term we cannot name the owner of
		}
		g.setOwner(e) // missed the gain; the ready names the owner
		g.Ready = true
		return Applied
	case e.Type.Loses():
		if e.Previous == nil {
			// Snapshot "no owner at zxid Z": it supersedes an owner whose
			// node was created (czxid = term) no later than Z.
			if g.Owner == nil {
				return g.emptyGap(e)
			}
			if e.Zxid < g.Term {
				return Stale
			}
			g.clear(e, g.Term)
			return Applied
		}
		switch {
		case e.Term < g.Term:
			return Stale
		case e.Term == g.Term && g.Owner == nil:
			return Unchanged
		}
		g.clear(e, e.Term) // this term, or a newer one whose gain we missed
		return Applied
	}
	// Candidate events: new by id is all there is to know, and what they
	// say of the owner's tenure.
	if g.Owner != nil && e.Term == g.Term {
		g.restate(e)
	}
	return Applied
}

// emptyGap judges a snapshot finding no owner when the group already has
// none: with Gap set it is news (owners may have come and gone unseen since
// what the state knows) unless it is older than the last owner's term, or
// a gap the state already holds at a zxid no older.
//
// A note that differs (why nobody owns: a node not taken for a leader's
// appeared or went) is news too, unless older than the state.
func (g *OwnerState) emptyGap(e Event) Verdict {
	switch {
	case e.Zxid < g.Term:
		if !e.Gap {
			return Unchanged
		}
		return Stale
	case e.Note != g.Note && e.Zxid >= g.Zxid:
		g.Note, g.Zxid = e.Note, e.Zxid
		if e.Gap {
			g.Gap, g.Ready, g.Hazard = true, false, ""
		}
		return Applied
	case !e.Gap:
		return Unchanged
	case g.Gap && e.Zxid <= g.Zxid:
		return Unchanged
	}
	g.Gap, g.Zxid, g.Ready, g.Hazard = true, max(g.Zxid, e.Zxid), false, ""
	return Applied
}

// restate takes the hazard an event about the current owner's term
// reports, when it is no older than what the state holds: Applied when
// that changed the hazard, else Unchanged.
func (g *OwnerState) restate(e Event) Verdict {
	if !e.HazardNews(g.Zxid, g.Hazard) {
		return Unchanged
	}
	g.Hazard, g.Zxid = e.Hazard, e.Zxid
	return Applied
}

func (g *OwnerState) setOwner(e Event) {
	o := *e.Owner
	g.Owner, g.Term, g.Zxid, g.Ready, g.Gap, g.Recipe, g.Hazard, g.Note = &o, e.Term, e.Zxid, false, e.Gap, e.Recipe, e.Hazard, e.Note
}

func (g *OwnerState) clear(e Event, term int64) {
	g.Owner, g.Term, g.Zxid, g.Ready, g.Gap, g.Hazard, g.Note = nil, term, e.Zxid, false, e.Gap, "", e.Note
}

// Owner returns the current owner of group and its term; ok is false when
// the group has no known owner.
func (f *Follower) Owner(group string) (owner *Participant, term int64, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.groups[group]
	if g == nil || g.Owner == nil {
		return nil, 0, false
	}
	o := *g.Owner
	return &o, g.Term, true
}

// Current returns the state of every group the follower has seen, owned or
// not, by group path, judged fresh or stale as of now. The map and its
// values are copies.
func (f *Follower) Current() map[string]OwnerState {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]OwnerState, len(f.groups))
	for k, g := range f.groups {
		c := g.OwnerState
		if g.Owner != nil {
			o := *g.Owner
			c.Owner = &o
		}
		c.Freshness = f.bridges.JudgeGroup(now, k, g.sources...)
		out[k] = c
	}
	return out
}
