// Package elect is herald's ZooKeeper recipes: leader election and locks on
// SEQUENCE|EPHEMERAL nodes, an observer for any group that follows that
// convention, and fenced writes for leaders (acknowledgment, checkpoints).
//
// # Sessions own liveness
//
// A Session is one ZooKeeper session. Its State is Connected, Suspended
// (connection lost, session perhaps alive) or Lost (expired; every
// ephemeral node gone). A Session never quietly turns into a new ZooKeeper
// session: once lost, Done is closed and the caller opens a new one. A
// session suspended for a whole session timeout is declared lost, because
// the servers have expired it by then.
//
// # One queue, two recipes
//
// Election and Lock share one core. A participant creates a
// SEQUENCE|EPHEMERAL node named in the dialect the group's other clients
// order by sequence (see Dialect: Curator's protected form, Kazoo's, the
// classic texts'), lists the children without a watch, owns the group
// when its node is the lowest, and otherwise watches only the node just
// below its own and, in a deeper queue, the one two below, so a change
// wakes one process, not a herd. Ownership comes only from proof: a
// listing that shows our node lowest, or the node just below gone when it
// was the only lower one at the last listing (sequence numbers only grow,
// so no lower node can appear after a listing), heard on the connection
// our own node's watch was set on: ZooKeeper keeps a session's events in
// order along one connection only (see Session.connection). The node two below going
// only makes us list, while our predecessor still owns: when that listing
// shows it alone below us, its release hands over with no round trip. A
// data change on a watched node is never a release. The first listing goes
// out right behind the create, once the create is written rather than
// answered (the server answers a session's requests in order), and a
// waiter's watches go out together: a free group costs one round trip to
// take, a waiter two to be in place. An owner releases by
// deleting its node, and nothing else ever touches a queue node, so every
// recipe's watch fires NodeDeleted; why it went is written on the group
// node in the same transaction (see the fencing section). Sequences are
// signed 32-bit counters that can wrap; they are ordered with
// serial-number arithmetic, and children whose names do not end in a
// sequence are ignored. Foreign clients do not order across the wrap, so a
// group past it that holds one is refused (wrapHazard).
//
// The watches are data watches, which are never left behind on a node
// that is already gone. In a rotation, where the same clients take a lock
// in turn and each queues again as it releases, the nodes below a waiter
// belong to the same sessions every time, one create later; once two
// waits show that, the waiter names them (a herald id counts its session's
// creates) and watches them without listing first. A guess names one
// sequence number each, so a node found under it is the one at that place;
// a miss costs the requests sent and stops the guessing until the pattern
// returns.
// Participants must be allowed to read each other's nodes: ZooKeeper sends
// watch events only to sessions that may read the node.
//
// If the reply to our create is lost with the connection, we find our node
// again by the herald id in its name and accept it only if its
// ephemeralOwner is our session. A cancelled Campaign or Acquire removes its
// node with a fresh context; a Release that cannot reach the servers keeps
// trying in the background until it succeeds or the session ends.
//
// # Handles
//
// Campaign and Acquire return a Handle. Its Done channel is closed the
// moment ownership is no longer safe: on suspension (LoseOnSuspend, the
// default) or only on expiry (LoseOnExpiry), when our node is deleted by
// someone else, or on Resign/Release. Term is our node's czxid: the fencing
// token, growing with every new owner. A Handle that lost ownership to a
// suspension, or stepped down, keeps its node (so nobody else owns) until
// Resign or Release says its owner stopped, or GiveBackDelay (a third of
// the session timeout) passed: stop your work when Done closes, then call
// Resign or Release.
//
// # Fencing
//
// Writes a leader makes for its leadership go in a multi with a check of
// its own node, and read what they replace first: a write is refused with
// ErrNotLeader once the owner's node is gone or a later term has written,
// version-checked, so a deposed owner never overwrites a newer one. The
// group keeps two persistent nodes whose names no recipe parses:
// herald-office (the leader acknowledgment of seed 002, and a release for
// another reason than the owner's own call) and herald-checkpoint (seed
// 004: progress the next leader resumes from); herald makes neither where
// go-zookeeper's Lock may queue (ErrNoSideNodes). A resignation or release
// is recorded on the group node itself, in the transaction that deletes
// the owner's node. A Fence lets another process, such as the child of
// herald run, write on its leader's behalf.
//
// # Observing
//
// Observe streams a group's changes (Snapshot, OwnerChanged, Joined, Left,
// Ready, Unknown) computed from one children watch, a data watch on the
// owner's node and one on the office; why an owner went comes from the
// parent stat of the listing (the group node written in the same
// transaction as the last child change is a release) or the office. It
// reads groups written by herald, Apache Curator, Kazoo, go-zookeeper's
// Lock, Solr, Mesos and the classic recipes' names, and ObserveSingle
// reads single-node leaders (Kafka's controller, HBase's master, ...). A
// node that no session holds, or that appears below the owner, is flagged
// Suspect and never reported as the owner; one older than the node that
// would own holds the queue up (every recipe waits for its deletion), so
// then nobody owns and View.Blocked names it. Nor does a node no session
// holds make a Hazard, whatever its name. It reports Gap when it cannot
// prove it saw every intermediate owner (the parent's cversion moved more
// than the listings explain, or a node that left was ahead of the new
// owner), also across a lost connection or, with Since, between
// observers. It reports Hazard when the group mixes node names one of its
// foreign clients cannot order, so that two of them may each believe they
// own (herald cannot stop a client that misreads its node from joining
// after it; it can say so).
//
// ObserveMany observes many groups, and with AddSingle many single-node
// leaders, on one dispatcher: every watch event is routed by path from the
// session's receive loop, and a bounded pool of workers reads what fired,
// with no goroutine per group.
//
// # Reading the code
//
// The states a participant and an observer go through each have a short
// function named after them:
//
//   - queue.go: the create (enqueue, create), finding our node after a
//     lost reply (find), and leaving without owning (withdraw, giveUp).
//   - wait.go: a waiter's states, run by wait: listing (list, behind),
//     watching (watching, arm, watchAll, fired, ownFired) and owning
//     (belowGone, ownKept). rotation.go names the nodes below without
//     listing (guessing).
//   - handle.go: an owner's monitor, each turn onState then await; the
//     guard against clients that cannot read our node (guard).
//   - office.go and group.go: the release (deleteOwn, deleteMarked) and
//     the mark it writes on the group node; fence.go: fenced writes.
//   - observe_loop.go: an observer's loop (step, suspended, await);
//     observe.go reads a snapshot (reader.readGuess, fillQueue),
//     observe_diff.go turns two snapshots into changes (diff, missed),
//     observe_release.go tells why an owner went. many.go runs many
//     groups on one dispatcher; single.go and single_observe.go read and
//     follow single-node leaders.
package elect
