package audit

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// Tenure is one owner's hold of a group: one row of `herald history`.
//
// A tenure states only what the events observed. Its start and end are
// either seen (an observer saw the change happen, so the time is right up to
// the observation delay) or not: an end nobody saw is given as the last time
// the owner was seen holding (UntilSeen false: "until ≥"), a start nobody saw
// as the first time it was seen holding (FromSeen false: "from ≤"). HeldFor
// is then a lower bound, never a guess across a stretch nobody observed.
type Tenure struct {
	Group  string
	Recipe elect.Recipe
	// Term is the owner node's czxid, the fencing token.
	Term  int64
	Owner publish.Participant
	// From is when the owner was elected or acquired the lock (FromSeen),
	// or, when no observer saw that, when it was first seen holding (a
	// snapshot); zero when it was never seen holding (the tenure is known
	// only from its end).
	From     time.Time
	FromSeen bool
	// Ready is when a leader reported it had taken office; zero if never.
	Ready time.Time
	// Until is when the tenure ended (UntilSeen), or, when no observer saw
	// it end, the last time it was seen holding: it ended later, before the
	// next event of the group. Zero while it is still held as far as the
	// events tell.
	Until     time.Time
	UntilSeen bool
	// LastSeen is the last time an event showed this owner holding (or,
	// for an owner a bridge lost sight of with its connection, the last
	// moment ZooKeeper vouched for it: publish.Event.LastSeen).
	LastSeen time.Time
	// HeldFor is how long the owner was seen holding: Until-From, or for an
	// open tenure LastSeen-From; zero when From is unknown. Exact (up to the
	// observation delay) only when Exact reports true, else a lower bound.
	HeldFor time.Duration
	// Reason says why it ended, when the end was seen: the lost/released
	// event's reason, or elect.ReasonUnknown when the next owner was seen
	// replacing it without one. Empty when the end was not seen.
	Reason elect.Reason
	// Gap is true when an owner may be hidden between the previous row of
	// the group and this one: an event carried the gap flag, the new
	// owner's predecessor is not the owner last seen, the tenure's start
	// was never seen, or it was first seen in a snapshot taken after a
	// stretch the events did not observe.
	Gap bool
	// TwoOwners is true when an event showed, during the tenure, that the
	// group mixed node names one of its clients cannot order
	// (publish.Event.Hazard): another client may have believed it owned at
	// the same time.
	TwoOwners bool
	// Missing marks a row that is no tenure but a stretch in which owners
	// may have held unseen: an event with the gap flag found the group
	// without an owner (a restarted bridge's snapshot, say), so whoever
	// came and went since the group was last observed was not seen. Owner
	// is empty and Term 0; From is when the group was last observed before
	// (zero when no event tells), Until the time of that event; Gap is
	// true. Such a row is kept even when no later tenure follows.
	Missing bool
	// Unconfirmed is set, by a reader that has the bridges' heartbeats
	// (`herald history --nats` or `--kafka`), on a tenure the events leave
	// open whose owner no bridge confirms now: the bridge that reported it
	// stopped or went silent, or the owners view names another owner or
	// none. The events cannot say it still holds. Confirmed is when a
	// bridge last confirmed it (zero when not known).
	Unconfirmed bool
	Confirmed   time.Time
	// ClocksDisagree is set on a tenure whose end is dated before its
	// start: the events of its two ends came from bridges on hosts whose
	// clocks disagree by more than it lasted (an HA takeover between
	// them). Their order, by zxid, is right; how long it held is not
	// known (HeldFor zero), and the row is not exact.
	ClocksDisagree bool
}

// Open reports whether the tenure has not ended as far as the events tell.
func (t Tenure) Open() bool { return t.Until.IsZero() }

// Exact reports whether both ends were seen happen, so HeldFor is the
// tenure's length (up to the observation delay), not a lower bound. A
// Missing row is never exact: nobody was seen holding.
func (t Tenure) Exact() bool {
	return t.FromSeen && t.UntilSeen && !t.Open() && !t.Missing && !t.ClocksDisagree
}

// tenureJSON is Tenure on the wire (`herald history --json`): snake_case
// keys like `herald who --json`, durations in seconds, unknown times null.
type tenureJSON struct {
	Group     string              `json:"group"`
	Recipe    elect.Recipe        `json:"recipe"`
	Term      int64               `json:"term"`
	Owner     publish.Participant `json:"owner"`
	From      *time.Time          `json:"from"`
	FromSeen  bool                `json:"from_seen"`
	Ready     *time.Time          `json:"ready,omitempty"`
	Until     *time.Time          `json:"until"`
	UntilSeen bool                `json:"until_seen"`
	LastSeen  *time.Time          `json:"last_seen"`
	HeldFor   *float64            `json:"held_for"`
	Exact     bool                `json:"exact"`
	Reason    elect.Reason        `json:"reason,omitempty"`
	Gap       bool                `json:"gap"`
	TwoOwners bool                `json:"two_owners_possible,omitempty"`
	Missing   bool                `json:"missing_owners,omitempty"`
	// Unconfirmed and LastConfirmed: an open tenure no bridge confirms.
	Unconfirmed   bool       `json:"unconfirmed,omitempty"`
	LastConfirmed *time.Time `json:"last_confirmed,omitempty"`
	// ClocksDisagree: the end is dated before the start (held_for null).
	ClocksDisagree bool `json:"clocks_disagree,omitempty"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// MarshalJSON writes snake_case keys; held_for is in seconds (null when
// From is unknown, and for a stretch of missing owners), from/until/
// last_seen are null when unknown or open; missing_owners marks a
// Missing row.
func (t Tenure) MarshalJSON() ([]byte, error) {
	j := tenureJSON{Group: t.Group, Recipe: t.Recipe, Term: t.Term, Owner: t.Owner,
		From: timePtr(t.From), FromSeen: t.FromSeen, Ready: timePtr(t.Ready),
		Until: timePtr(t.Until), UntilSeen: t.UntilSeen, LastSeen: timePtr(t.LastSeen),
		Exact: t.Exact(), Reason: t.Reason, Gap: t.Gap, TwoOwners: t.TwoOwners, Missing: t.Missing,
		Unconfirmed: t.Unconfirmed, LastConfirmed: timePtr(t.Confirmed), ClocksDisagree: t.ClocksDisagree}
	if !t.From.IsZero() && !t.Missing && !t.ClocksDisagree {
		s := t.HeldFor.Seconds()
		j.HeldFor = &s
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (t *Tenure) UnmarshalJSON(b []byte) error {
	var j tenureJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	get := func(p *time.Time) time.Time {
		if p == nil {
			return time.Time{}
		}
		return *p
	}
	*t = Tenure{Group: j.Group, Recipe: j.Recipe, Term: j.Term, Owner: j.Owner,
		From: get(j.From), FromSeen: j.FromSeen, Ready: get(j.Ready),
		Until: get(j.Until), UntilSeen: j.UntilSeen, LastSeen: get(j.LastSeen),
		Reason: j.Reason, Gap: j.Gap, TwoOwners: j.TwoOwners, Missing: j.Missing,
		Unconfirmed: j.Unconfirmed, Confirmed: get(j.LastConfirmed), ClocksDisagree: j.ClocksDisagree}
	if j.HeldFor != nil {
		t.HeldFor = time.Duration(*j.HeldFor * float64(time.Second))
	}
	return nil
}

// History turns events from any source into tenures, sorted by group and
// term (a Missing row after the tenures that were known before it). Events are taken in the order given within each group (a log's or
// a stream's order; Merge orders several logs). An id counts once: a later
// copy of it (at-least-once delivery, a second bridge, a snapshot restating
// the owner) only tells that its owner was still holding at that copy's
// time. Candidate events are read only for that too.
//
// What was observed: an event that is not a snapshot is a change an
// observer saw happen; a snapshot (bridge start, HA takeover, reconnect,
// new session) re-states the state after a stretch nobody may have
// observed. So a tenure ends where its loss was seen, or where the next
// owner was seen replacing it (a non-snapshot gain naming it as previous);
// when instead a snapshot (or a gain naming someone else) shows another
// owner or none, its end was not seen, and Until is the last time any
// event showed it holding, with UntilSeen false.
func History(events []publish.Event) []Tenure { return history(events, false) }

// HistoryTrimmed is History of events from a store that dropped its
// oldest events (a stream's or topic's retention, a purge, an audit log's
// oldest rotated files removed). A bridge's first event of a group is a
// snapshot; a group whose first stored event is a change lost the events
// before it, and the tenure that change starts or names is marked Gap:
// owners may be hidden before it. History tells such a tenure as the
// group's first, following nobody.
func HistoryTrimmed(events []publish.Event) []Tenure { return history(events, true) }

func history(events []publish.Event, trimmed bool) []Tenure {
	parts := byGroup(events)
	sort.SliceStable(parts, func(i, j int) bool { return parts[i][0].Group < parts[j][0].Group })
	each := make([][]Tenure, len(parts))
	n := 0
	for i, evs := range parts {
		each[i] = groupHistory(evs, trimmed)
		n += len(each[i])
	}
	// Sized once: a log of millions of tenures is not copied again and
	// again as the result grows.
	out := make([]Tenure, 0, n)
	for _, ts := range each {
		out = append(out, ts...)
	}
	return out
}

// byGroup splits events into each group's, in their order: parts of
// events itself when each group's events are together, as Merge leaves
// them (a year's log is not copied again), copies otherwise.
func byGroup(events []publish.Event) [][]publish.Event {
	var parts [][]publish.Event
	done := map[string]bool{}
	start := 0
	for i := 1; i <= len(events); i++ {
		if i < len(events) && events[i].Group == events[start].Group {
			continue
		}
		g := events[start].Group
		if done[g] { // the group's events are not together
			m := map[string][]publish.Event{}
			for _, e := range events {
				m[e.Group] = append(m[e.Group], e)
			}
			parts = parts[:0]
			for _, evs := range m {
				parts = append(parts, evs)
			}
			return parts
		}
		done[g] = true
		parts = append(parts, events[start:i:i])
		start = i
	}
	return parts
}

// Merge merges the events of several logs (each in its own order) into
// one sequence for History: per group by zxid, at one zxid the changes
// before the snapshots that re-state the state after it, then by time.
// The same line found twice (the same id at the same time) is kept once;
// other copies of an id stay, and History counts the id once. A copy
// marked gap in one log whose id another log holds unmarked loses the
// mark: the gap says its log missed what came before (a bridge taking
// over past its replay window marks its own log so), and the other log,
// whose bridge saw the event with nothing missed, has what came before.
// A snapshot's sighting of an owner counts as a copy of that owner's
// change (publish.Event.ChangeID): its own id is its bridge's, and the
// owner held from the change to the sighting, so no owner is missing.
//
// An event with zxid 0 (a bridge found the group gone, and names no zxid
// so that every bridge gives it the same id) is ordered at the zxid of the
// event before it in its own log, where its bridge saw it come: by time
// among those, after them. At zxid 0 it would come before the tenure it
// ends.
//
// A snapshot from a new ensemble (publish.Event.NewEnsemble) starts a new
// era of its group in its log: its events, and those after it, come after
// the earlier ones whatever their zxids (a rebuilt ensemble's start again
// low). Logs are taken to have seen the same new ensembles.
func Merge(logs ...[]publish.Event) []publish.Event {
	type key struct {
		id   string
		time int64
		snap bool
	}
	seen := map[key]bool{}
	whole, total := unmarkedHolders(logs)
	all := make([]placed, 0, total)
	for i, l := range logs {
		last := map[string]int64{} // group -> the last zxid in this log
		era := map[string]int32{}  // group -> the new ensembles so far in this log
		for j := range l {
			e := &l[j]
			if e.Restarts() {
				era[e.Group]++
				last[e.Group] = 0
			}
			at := e.Zxid
			if at == 0 {
				at = last[e.Group]
			} else {
				last[e.Group] = at
			}
			h, ok := whole[e.ChangeID()]
			ungap := e.Gap && ok && (h.more || h.first != i) // covered by the log that holds it unmarked
			k := key{e.ID, e.Time.UnixNano(), e.Snapshot}
			if e.ID != "" && seen[k] {
				continue
			}
			seen[k] = true
			all = append(all, placed{log: int32(i), i: int32(j), ungap: ungap, zxid: at, era: era[e.Group]})
		}
	}
	ev := func(p placed) *publish.Event { return &logs[p.log][p.i] }
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		ea, eb := ev(a), ev(b)
		switch {
		case ea.Group != eb.Group:
			return ea.Group < eb.Group
		case a.era != b.era:
			return a.era < b.era
		case a.zxid != b.zxid:
			return a.zxid < b.zxid
		case ea.Snapshot != eb.Snapshot && ea.Zxid != 0 && eb.Zxid != 0:
			return !ea.Snapshot
		}
		return ea.Time.Before(eb.Time)
	})
	out := make([]publish.Event, len(all))
	for i, p := range all {
		out[i] = *ev(p)
		if p.ungap {
			out[i].Gap = false
		}
	}
	return out
}

// placed is where a merged event goes: logs[log][i], at zxid, with its gap
// mark dropped when ungap. Not a copy of the event: a log holds millions,
// each some hundred bytes.
type placed struct {
	log, i int32
	// era counts the snapshots from a new ensemble (publish.Event
	// NewEnsemble) its log held of the group up to it: zxids order events
	// of one ensemble only, and a later ensemble's come after.
	era   int32
	ungap bool
	zxid  int64
}

// holders says which logs hold an event's id unmarked: the first, and
// whether another does too (no map per event: a log holds millions).
type holders struct {
	first int
	more  bool
}

// unmarkedHolders maps every change id (publish.Event.ChangeID: a
// sighting's is its change's) held without a gap mark to the logs
// holding it so, and counts the events of all logs. A log's first event
// of a group, a snapshot, holds nothing so: unmarked, it says only that
// its bridge had no report of the group to measure against (a bridge's
// first run), not that it saw what came before. (A first event that is a
// change its bridge saw happen, as in a log whose older files are gone,
// does.)
func unmarkedHolders(logs [][]publish.Event) (map[string]holders, int) {
	whole := map[string]holders{}
	total := 0
	for i, l := range logs {
		total += len(l)
		observed := map[string]bool{}
		for _, e := range l {
			before := observed[e.Group]
			observed[e.Group] = true
			if id := e.ChangeID(); !e.Gap && id != "" && (before || !e.Snapshot) {
				if h, ok := whole[id]; !ok {
					whole[id] = holders{first: i}
				} else if h.first != i {
					whole[id] = holders{first: h.first, more: true}
				}
			}
		}
	}
	return whole, total
}
