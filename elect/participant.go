package elect

import (
	"fmt"
	"time"
)

// Recipe says how a group is used: an election or a lock. Both use the same
// sequential queue; they differ only in the words herald uses for them.
type Recipe string

const (
	RecipeElection Recipe = "election"
	RecipeLock     Recipe = "lock"
)

// Known reports whether r is one of the recipes herald knows: election or
// lock.
func (r Recipe) Known() bool { return r == RecipeElection || r == RecipeLock }

// Participant is one node in a group's queue: a candidate of an election or a
// waiter (or holder) of a lock.
type Participant struct {
	// ID is the participant's identity: the node's data when it holds one,
	// else what the node's name says (the session or GUID part).
	ID string `json:"id"`
	// Node is the znode's name (not its full path).
	Node string `json:"node"`
	// Session is the ZooKeeper session that owns the ephemeral node, from
	// its ephemeralOwner (0 when not read: a name's claim is not proof).
	Session int64 `json:"session"`
	// Sequence is the sequence number ZooKeeper appended to the name.
	Sequence int32 `json:"sequence"`
	// Czxid is the zxid that created the node. For the owner it is the term,
	// the fencing token. 0 when not read.
	Czxid int64 `json:"czxid,omitempty"`
	// Suspect says why the node cannot be what the queue says it is (not
	// ephemeral, or appeared below the owner): such a node is never
	// reported as the owner.
	Suspect string `json:"suspect,omitempty"`
}

// SessionHex renders the session id the way ZooKeeper's tools print it.
func (p Participant) SessionHex() string {
	if p.Session == 0 {
		return ""
	}
	return fmt.Sprintf("0x%x", uint64(p.Session))
}

func (p Participant) String() string {
	if p.ID != "" && p.ID != p.Node {
		return p.ID + " (" + p.Node + ")"
	}
	return p.Node
}

// Reason says why an owner stopped owning.
type Reason string

const (
	ReasonNone           Reason = ""
	ReasonResigned       Reason = "resigned"
	ReasonReleased       Reason = "released"
	ReasonSessionExpired Reason = "session expired"
	// ReasonSessionClosed: the session the ownership lived in was closed
	// (Session.Close), which deletes its nodes.
	ReasonSessionClosed Reason = "session closed"
	ReasonSuspended     Reason = "connection suspended"
	// ReasonDeleted: someone else deleted the owner's node while its
	// session lived (by hand, a tool). The owner reports it when it hears;
	// observers, for an owner that keeps a session node (ProveSessionEnd),
	// from that node, there and untouched by the deletion.
	ReasonDeleted Reason = "deleted"
	// ReasonCancelled: a waiter gave up, or left the queue, before it
	// learned that it owned (observers took it for the owner as the lowest
	// node; told by its session node where it keeps one).
	ReasonCancelled Reason = "cancelled"
	ReasonUnknown   Reason = "unknown"
	// ReasonTwoOwners: an owner stepped down because a client joined that
	// cannot read its node (see WatchForHazards).
	ReasonTwoOwners Reason = "two owners possible"
	// ReasonUnreadable: the owner's node has an ACL (WithACL) that does not
	// let its own session READ it. ZooKeeper would not tell it of the
	// node's deletion, so it gave ownership up as it began.
	ReasonUnreadable Reason = "own node unreadable"
	// ReasonGroupUnreadable: the owner, guarding its group (see
	// WatchForHazards), may no longer list it (someone changed the
	// group's ACL): a client joining that cannot read its node would go
	// unseen, so it gave ownership up.
	ReasonGroupUnreadable Reason = "group unreadable"
	// ReasonRunnerDied: the process that owned (herald run or herald
	// lock) died; its watchdog stopped the command and deleted the node
	// (ReleaseAbandoned).
	ReasonRunnerDied Reason = "runner died"
	// ReasonSessionEnded: the owner's session ended (it expired, or was
	// closed without a release), as an observer saw: ZooKeeper deleted the
	// owner's node together with the session node that herald run and
	// herald lock keep (ProveSessionEnd), in one transaction.
	ReasonSessionEnded Reason = "session ended"
)

// ChangeKind is what an observed change is.
type ChangeKind string

const (
	// Snapshot is the full state of a group: emitted first, and again after
	// every reconnect (the observer cannot know what it missed); for a
	// single leader's node, also when nobody holds it and why changes
	// (its Note: a node not taken for a leader's appeared or went).
	Snapshot ChangeKind = "snapshot"
	// OwnerChanged: the lowest node changed (Previous lost, Owner won; either
	// may be nil).
	OwnerChanged ChangeKind = "owner-changed"
	// Ready: the owner recorded that it finished its leader procedure.
	Ready ChangeKind = "ready"
	// Joined and Left: a non-owning candidate or waiter came or went.
	Joined ChangeKind = "joined"
	Left   ChangeKind = "left"
	// Unknown: the observer lost its ZooKeeper connection; the state of the
	// group is not known until the next Snapshot.
	Unknown ChangeKind = "unknown"
)

// Change is one observed change of a group. Its Owner and Queue are
// shared with the observer (see View): read them, do not change them.
type Change struct {
	Kind   ChangeKind `json:"kind"`
	Group  string     `json:"group"`
	Recipe Recipe     `json:"recipe"`
	// Owner is the owner after the change (nil when there is none).
	Owner *Participant `json:"owner,omitempty"`
	// Previous is the owner before the change, for OwnerChanged.
	Previous *Participant `json:"previous,omitempty"`
	// Candidate is the node that joined or left, for Joined and Left.
	Candidate *Participant `json:"candidate,omitempty"`
	// Queue is every parseable node in order, owner first, after the change.
	Queue []Participant `json:"queue,omitempty"`
	// Reason is why Previous (or a leaving Candidate) went, when known.
	Reason Reason `json:"reason,omitempty"`
	// Gap is true when the observer cannot prove it saw every intermediate
	// owner between its last view and this one.
	Gap bool `json:"gap,omitempty"`
	// Zxid is the zxid at which the change became visible (the parent's
	// pzxid, or the mzxid of an acknowledgment).
	Zxid int64 `json:"zxid"`
	// Ready is true when the current owner has acknowledged taking office.
	Ready bool `json:"ready,omitempty"`
	// Epoch is the system's own leadership epoch, when it keeps one
	// (Kafka's /controller_epoch, read with its controller): 0 otherwise.
	Epoch int64 `json:"epoch,omitempty"`
	// Hazard is the group's View.Hazard after the change: why two of its
	// clients may each believe they own, "" when none can.
	Hazard string `json:"hazard,omitempty"`
	// GroupCzxid is the zxid that created the group node the change was
	// seen in, 0 when not read. A group deleted and made again gets a new
	// one, and may give its nodes the old nodes' names.
	GroupCzxid int64 `json:"group_czxid,omitempty"`
	// Before and BeforeHeld, on a Snapshot taken after a stretch the
	// observer did not see (its connection was lost), are the owner it
	// last reported, when that owner no longer holds, and the newest moment
	// ZooKeeper vouched that it still held: it went after BeforeHeld, at a
	// time nobody saw. Both are empty when the owner is the same, or when
	// nothing vouched for it after the last report.
	Before     *Participant `json:"before,omitempty"`
	BeforeHeld time.Time    `json:"before_held,omitzero"`
	// NotBefore, when set, says the change was not seen promptly: the
	// observer's process stalled (SIGSTOP, a paused VM, starved of CPU)
	// between the last moment ZooKeeper vouched for the state before it and
	// the change's report, so it happened after NotBefore at a moment the
	// observer cannot tell, perhaps well before it was reported; or the read
	// that found it also found owners that came and went unseen (a Gap: a
	// member cut off from the leader catching up, a burst of short
	// tenures), so it came after more than one change; or its watch fired
	// while a sync of the session had gone unanswered for over a second
	// (its member behind the leader, delivering what changed meanwhile
	// all at once as it catches up); or it was read on a later connection
	// than the group's last read, by an observer too busy to say Unknown
	// while there was none, so it may have happened meanwhile. Observe,
	// ObserveSingle and ObserveMany set it.
	NotBefore time.Time `json:"not_before,omitzero"`
	// Note is what to know of Owner beyond its name (SingleView.Note):
	// for Kafka's persistent /controller, that it may name a past
	// controller; without an owner, why a node standing at a leader's
	// path is not taken for one. "" otherwise.
	Note string `json:"note,omitempty"`
}

// OwnerTerm returns the owner's term (czxid), 0 when there is no owner.
func (c Change) OwnerTerm() int64 {
	if c.Owner == nil {
		return 0
	}
	return c.Owner.Czxid
}
