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
// Election and Lock share one core. A participant creates
// PARENT/<prefix><session>-<nonce>_<sequence>, lists the children without a
// watch, owns the group when its node is the lowest, and otherwise watches
// only the node just below its own, so a change wakes one process, not a
// herd. When that node was the only lower one, its deletion makes us owner
// without listing again: sequence numbers only grow. An owner that releases
// writes its node and deletes it in one transaction; the write fires its
// successor's watch as NodeDataChanged, which herald never causes otherwise,
// so the successor takes over without listing either. An owner that dies,
// or a waiter that gives up, fires NodeDeleted, and the successor lists the
// children as the classic recipe says. Sequences are signed
// 32-bit counters that can wrap; they are ordered with serial-number
// arithmetic, and children whose names do not end in a sequence are
// ignored.
//
// The watch on the node below is a data watch, which is never left behind
// on a node that is already gone. In a rotation, where the same clients
// take a lock in turn and each queues again as it releases, a waiter's
// predecessor is the same session every time, one create later; once two
// waits show that, the waiter names its predecessor (the nonce counts a
// session's creates) and watches it without listing. A guess names one
// sequence number, so a node found under it is the one just below ours; a
// miss costs a request and stops the guessing until the pattern returns.
// Participants must be allowed to read each other's nodes: ZooKeeper sends
// watch events only to sessions that may read the node.
//
// If the reply to our create is lost with the connection, we find our node
// again by the session and nonce in its name and accept it only if its
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
// token, growing with every new owner.
//
// # Fencing
//
// Writes a leader makes for its leadership go in a multi with a check of
// its own node, so a deposed leader's write fails with ErrNotLeader. The
// group keeps two persistent nodes whose names no recipe parses:
// herald-office (the leader acknowledgment of seed 002, and why the last
// owner that did not simply resign gave up) and herald-checkpoint (seed
// 004: progress
// the next leader resumes from). A Fence lets another process, such as the
// child of herald run, write on its leader's behalf.
//
// # Observing
//
// Observe streams a group's changes (Snapshot, OwnerChanged, Joined, Left,
// Ready, Unknown) computed from one children watch, a data watch on the
// owner's node (a herald owner writes it only in the transaction that
// releases it, so the watch tells a resignation from an owner that
// vanished) and one on the office. It reads groups written by herald,
// Apache Curator, Kazoo,
// go-zookeeper's Lock and the classic recipes' names. It reports Gap when
// it cannot prove it saw every intermediate owner (the parent's cversion
// moved more than the listings explain, or a node that left was ahead of
// the new owner).
package elect
