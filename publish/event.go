package publish

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/zkherald/herald/elect"
)

// Type is the kind of a herald event.
type Type string

// The event types herald publishes.
const (
	LeaderElected   Type = "leader.elected"
	LeaderReady     Type = "leader.ready"
	LeaderLost      Type = "leader.lost"
	LockAcquired    Type = "lock.acquired"
	LockReleased    Type = "lock.released"
	CandidateJoined Type = "candidate.joined"
	CandidateLeft   Type = "candidate.left"
)

// Types lists every event type, in a stable order.
var Types = []Type{LeaderElected, LeaderReady, LeaderLost, LockAcquired, LockReleased, CandidateJoined, CandidateLeft}

// Valid reports whether t is one of the event types herald publishes.
func (t Type) Valid() bool {
	for _, k := range Types {
		if k == t {
			return true
		}
	}
	return false
}

// Gains reports whether the event names a new owner.
func (t Type) Gains() bool { return t == LeaderElected || t == LockAcquired }

// Loses reports whether the event says an owner stopped owning.
func (t Type) Loses() bool { return t == LeaderLost || t == LockReleased }

// HazardNews reports whether e changes what is known of the hazard of a
// tenure last recorded as hazard, at zxid: e is no older and says
// otherwise. Every owners view (Follower, the KV bucket, the owners topic)
// takes a hazard by this rule, so a late event never brings an old one
// back.
func (e Event) HazardNews(zxid int64, hazard string) bool {
	return e.Zxid >= zxid && e.Hazard != hazard
}

// GainOf is the type of the event that names a new owner of a group of
// recipe r: lock.acquired for a lock, leader.elected otherwise.
func GainOf(r elect.Recipe) Type {
	if r == elect.RecipeLock {
		return LockAcquired
	}
	return LeaderElected
}

// LossOf is the type of the event that says an owner of a group of recipe
// r stopped owning: lock.released for a lock, leader.lost otherwise.
func LossOf(r elect.Recipe) Type {
	if r == elect.RecipeLock {
		return LockReleased
	}
	return LeaderLost
}

// Participant is an owner or candidate as carried in an event.
type Participant struct {
	ID       string `json:"id"`
	Node     string `json:"node"`
	Session  string `json:"session,omitempty"`
	Sequence int32  `json:"sequence"`
	// Suspect says why the node cannot be what the queue says (see
	// elect.Participant.Suspect); such a node is never the owner.
	Suspect string `json:"suspect,omitempty"`
}

// Sighting is an owner seen holding: its node's term, and a moment it
// still held (Event.LastSeen).
type Sighting struct {
	Owner Participant `json:"owner"`
	Term  int64       `json:"term"`
	At    time.Time   `json:"at"`
}

// sightingOf is the Sighting a change's Before and BeforeHeld give, nil
// when they give none.
func sightingOf(c elect.Change) *Sighting {
	if c.Before == nil || c.BeforeHeld.IsZero() {
		return nil
	}
	return &Sighting{Owner: *FromElect(c.Before), Term: c.Before.Czxid, At: c.BeforeHeld.UTC()}
}

// FromElect converts an elect.Participant (nil stays nil).
func FromElect(p *elect.Participant) *Participant {
	if p == nil {
		return nil
	}
	return &Participant{ID: p.ID, Node: p.Node, Session: p.SessionHex(), Sequence: p.Sequence, Suspect: p.Suspect}
}

// Event is one observable change of a group's leadership or lock.
type Event struct {
	// ID is deterministic: the same change observed twice carries the same
	// id (see MakeID). It is the JetStream Nats-Msg-Id and the dedup key.
	ID     string       `json:"id"`
	Type   Type         `json:"type"`
	Group  string       `json:"group"`
	Recipe elect.Recipe `json:"recipe"`
	// Owner is the owner the event is about: the new owner for
	// elected/acquired/ready, the current owner (if any) otherwise.
	Owner *Participant `json:"owner,omitempty"`
	// Previous is the owner that lost, for lost/released, or the owner before
	// the new one for elected/acquired.
	Previous *Participant `json:"previous,omitempty"`
	// Candidate is the node that joined or left, for candidate events.
	Candidate *Participant `json:"candidate,omitempty"`
	// Term is the czxid of the owner node the event is about: the fencing
	// token. It only grows within a group.
	Term int64 `json:"term"`
	// Epoch is the system's own leadership epoch where it keeps one
	// (Kafka's controller epoch), published alongside the term.
	Epoch int64 `json:"epoch,omitempty"`
	// Zxid orders events within a group.
	Zxid   int64        `json:"zxid"`
	Reason elect.Reason `json:"reason,omitempty"`
	Gap    bool         `json:"gap,omitempty"`
	// Snapshot marks events a bridge published as part of a snapshot of the
	// current state (on start, takeover or reconnect) rather than as a change
	// it saw happen.
	Snapshot bool `json:"snapshot,omitempty"`
	// Hazard, when set, says why two clients of the group may each believe
	// they own as this event is observed (elect.Change.Hazard): the owner
	// named is the lowest node, and another client may think otherwise.
	Hazard string `json:"hazard,omitempty"`
	// LastSeen, on a snapshot a bridge took after a stretch it did not see
	// (its connection to ZooKeeper was lost), is the owner it last
	// reported, when that owner no longer holds, and the newest moment
	// ZooKeeper vouched that it still held: its tenure ended after
	// LastSeen.At, at a time nobody saw. history uses it as that tenure's
	// last sighting.
	LastSeen *Sighting `json:"last_seen,omitempty"`
	// NotBefore, when set, says the bridge may have seen the change late:
	// its process stalled (SIGSTOP, a paused VM, starved of CPU) after the
	// last moment ZooKeeper vouched for the state before it, so the change
	// happened after NotBefore, perhaps well before Time (elect.Change
	// NotBefore). history then gives the ends it marks as not seen.
	NotBefore *time.Time `json:"not_before,omitempty"`
	// Note is what to know of Owner beyond its name (elect.Change.Note):
	// for Kafka's persistent /controller, written by a KRaft controller
	// during a migration, that it may name a past controller; on an event
	// that says no owner, why a node at a leader's path is not taken for
	// a leader's.
	Note string `json:"note,omitempty"`
	// NewEnsemble, on the owner event of a snapshot (its first), says the
	// ZooKeeper ensemble the bridge reads is not the one the group's
	// earlier events came from: it was rebuilt empty, or the bridge was
	// pointed at another. Its zxids and terms started again, lower, and do
	// not order against the earlier ones: readers take the snapshot for the
	// group's state whatever they held before, and its Gap is set.
	NewEnsemble bool      `json:"new_ensemble,omitempty"`
	Time        time.Time `json:"time"`
	Source      string    `json:"source"`

	// groupCzxid is elect.Change.GroupCzxid, kept for the id of candidate
	// events (see candidateSubject); it is not published.
	groupCzxid int64
}

// Subject returns the node the event's id is derived from: the candidate for
// candidate events, the previous owner for lost/released, else the owner.
func (e Event) subjectNode() string {
	switch {
	case e.Type == CandidateJoined || e.Type == CandidateLeft:
		if e.Candidate != nil {
			return candidateSubject(e.Candidate.Node, e.groupCzxid)
		}
	case e.Type.Loses():
		if e.Previous != nil {
			return ownerSubject(e.Previous.Node, e.Term)
		}
		// A loss with no previous owner is a snapshot saying "nobody owns
		// this group at zxid Z". Without the zxid every such snapshot of a
		// group would share one id, and a consumer (or JetStream) that saw
		// an earlier one would drop a later one as a duplicate and keep a
		// stale owner. The same empty state re-observed has the same zxid
		// (the parent's pzxid), so the id stays deterministic.
		return "@" + strconv.FormatInt(e.Zxid, 10)
	default:
		if e.Owner != nil {
			return ownerSubject(e.Owner.Node, e.Term)
		}
	}
	return ""
}

// ownerSubject is an owner's node for its events' id, followed by the term
// (the node's czxid, the same for every bridge) when the node's name could
// come back (elect.NameInfo.MayRecur): a group made again may give a new
// tenure an old one's node name, and the two must not share an id, or the
// new tenure would be dropped as a duplicate. Names that cannot come back
// keep the id of group, node and type alone.
func ownerSubject(node string, term int64) string {
	if info, ok := elect.ParseName(node); ok && term != 0 && info.MayRecur() {
		return node + "@" + strconv.FormatInt(term, 10)
	}
	return node
}

// candidateSubject is a candidate's node for its events' id, followed by
// the group node's czxid when the name could come back: a group made again
// may give a new candidate an old one's name (a candidate's own czxid is
// not read), and the group node's czxid is the same for every bridge.
func candidateSubject(node string, groupCzxid int64) string {
	if info, ok := elect.ParseName(node); ok && groupCzxid != 0 && info.MayRecur() {
		return node + "@g" + strconv.FormatInt(groupCzxid, 10)
	}
	return node
}

// MakeID returns the deterministic id of a change: a hash of group, node and
// type. Two bridges (or one bridge after a restart) that observe the same
// change produce the same id.
func MakeID(group, node string, t Type) string {
	h := sha256.Sum256([]byte(group + "\x00" + node + "\x00" + string(t)))
	return hex.EncodeToString(h[:16])
}

// WithID returns e with its deterministic id filled in. The owner event
// and leader.ready of a snapshot are a bridge's sighting of a state, not
// the change that made it: their id adds the bridge (Source) and the
// state's zxid. The same snapshot sent again (a retried write, a restart
// finding the group as it left it) keeps its id, but another bridge's
// sighting (a shard that took the group over, a standby that took over)
// and a restatement of a tenure after later changes are stored: their id
// was the change's, and JetStream dropped them as duplicates of it, so
// the stream named only the bridge that first told the tenure, and not
// what a later bridge said.
func (e Event) WithID() Event {
	node := e.idNode()
	if e.sighting() {
		node += "\x00seen by " + e.Source + "@" + strconv.FormatInt(e.Zxid, 10)
	}
	e.ID = MakeID(e.Group, node, e.Type)
	return e
}

// WithChangeID returns e with the id of the change it tells, whoever
// observed it: WithID without the sighting. A standby holds its events
// under these ids, so that replaying them on takeover stores once what
// the bridge before it published (a snapshot the standby took while the
// other bridge led is no news of its own).
func (e Event) WithChangeID() Event {
	e.ID = e.ChangeID()
	return e
}

// ChangeID is the id of the change e tells, whoever observed it: its ID,
// but for a snapshot's sighting of the owner (see WithID), the id of its
// change, which a bridge that saw the change happen published it under.
func (e Event) ChangeID() string {
	if !e.sighting() {
		return e.ID
	}
	return MakeID(e.Group, e.idNode(), e.Type)
}

// idNode is e's subject node for its id, marked when e comes from a new
// ensemble: it may give its owner the node name and term (or the empty
// group the zxid) an old one had, and is not a duplicate.
func (e Event) idNode() string {
	node := e.subjectNode()
	if e.NewEnsemble {
		node += "\x00new-ensemble"
	}
	return node
}

// sighting reports whether e is a snapshot's statement of the group's
// owner (or of none) or of its readiness. A new ensemble's owner event
// (Restarts) is not: stores and readers start the group afresh at it, so
// every bridge's copy (an active's, a standby's replayed on takeover, past
// the owners that followed) must share one id and count once.
func (e Event) sighting() bool {
	return e.Snapshot && !e.Restarts() && (e.Type.Gains() || e.Type.Loses() || e.Type == LeaderReady)
}

// Restarts reports whether e is the owner event of a snapshot taken from a
// new ensemble (NewEnsemble): what was known of its group before no longer
// orders against it.
func (e Event) Restarts() bool {
	return e.NewEnsemble && (e.Type.Gains() || e.Type.Loses() || e.Type == LeaderReady)
}

// MarkNewEnsemble marks the events of one snapshot (Translate's, in its
// order) as taken from a new ensemble: every one a gap, the first, the
// owner event, NewEnsemble, with its id made again.
func MarkNewEnsemble(events []Event) {
	for i := range events {
		events[i].Gap = true
	}
	if len(events) > 0 && events[0].Snapshot {
		events[0].NewEnsemble = true
		events[0] = events[0].WithID()
	}
}

// Validate reports what is wrong with an event, if anything.
func (e Event) Validate() error {
	if !e.Type.Valid() {
		return fmt.Errorf("publish: event has unknown type %q", e.Type)
	}
	if e.Group == "" || e.Group[0] != '/' {
		return fmt.Errorf("publish: event group %q is not an absolute ZooKeeper path", e.Group)
	}
	if e.ID == "" {
		return errors.New("publish: event has no id")
	}
	if e.Type.Gains() && e.Owner == nil {
		return fmt.Errorf("publish: %s event for %s has no owner", e.Type, e.Group)
	}
	return nil
}
