// Package publish turns observed ZooKeeper elections and locks into typed
// events and fans them out to sinks, in order per group, at least once.
//
// # Event model
//
// One Event per observable change of a group (an election or lock parent
// path): leader.elected, leader.ready, leader.lost, lock.acquired,
// lock.released, candidate.joined, candidate.left. Translate makes them from
// an elect.Change. Each carries the owner it is about, its Term (the owner
// node's czxid: the fencing token, which only grows within a group), the
// Zxid at which the change became visible, a Reason for losses, and Gap
// when the observer could not prove it saw every intermediate owner.
//
// A bridge that starts, takes over or reconnects publishes a snapshot of
// every group (events with Snapshot=true): the owner (and leader.ready when
// acknowledged) and one candidate.joined per waiting node; a group with no
// owner yields a single loss event with no Previous, which tells consumers
// to clear the group. A snapshot only adds candidates: consumers that need
// exact membership after a gap should treat the snapshot's candidate.joined
// events (same Zxid) as the whole queue.
//
// # Ids
//
// An event's id is a hash of group, node and type (MakeID, WithID): the
// same change observed twice, by two bridges or after a restart, has the
// same id. A snapshot's owner event and leader.ready are a bridge's
// sighting of the state: their id adds the bridge's source and the
// state's zxid, so the same sighting sent again is a duplicate, while
// another bridge's, or one after later changes, is stored (ChangeID gives
// the id of the change it tells). Ids are the JetStream Nats-Msg-Id and
// every consumer's dedup key. A no-owner snapshot
// has no node; its id uses the zxid of the empty state instead. Where a
// node's name could come back in a group made again (elect.NameInfo.MayRecur),
// an owner's id adds its term and a candidate's the group node's czxid.
//
// # Pipeline: ordering and delivery
//
// Pipeline.Publish validates events and appends them to one backlog per
// sink; it never waits for a sink. Each sink has one worker that writes its
// backlog front first in batches (WithBatchSize), so every group's events
// reach every sink in Publish order; a batch mixes groups freely. A failed
// Connect or Write is retried, whole, with exponential backoff that never
// gives up (MaxElapsedTime 0), reconnecting first: delivery is
// at-least-once, and duplicates carry the same id. A slow or dead sink
// delays only itself.
//
// Each backlog is bounded (WithBacklog, default 10,000). At the bound the
// pending events are collapsed per group: the newest owner event, a
// leader.ready following it, and the newest event of each candidate still
// present are kept, in their order; the rest are dropped, counted in
// herald_collapsed_events_total, and the kept events of that group get
// Gap=true. An owners view that applies the collapsed backlog ends on the
// same owner as one that applied everything. The bound is exceeded only
// when the groups' needed events alone exceed it. A sink marked Lossless
// (the audit log) is never collapsed: its backlog grows without bound
// rather than block Publish, because blocking would stall the observer and
// with it every other sink; watch herald_backlog and Stats for it.
//
// Close stops accepting events and drains every backlog until its context
// ends, then reports, per sink, what was never acknowledged.
//
// # Consumers
//
// Follower is the transport-independent consumer core: it drops duplicate
// ids and events of stale terms, and keeps the current owner of each group.
// Transport followers (NATS, Kafka) decode messages with Decode and feed
// them to Follower.Apply.
//
// # Staleness
//
// A value in a store of current owners names the bridge that wrote it; the
// bridge confirms its values with one Heartbeat record per bridge (written
// with HeartbeatSink, beside the pipeline), and Bridges.Judge says whether a
// value is stale: its writer, or the active bridge of the writer's HA
// election, has not confirmed within max(3 intervals, MinStaleAfter), or
// stopped. Followers report it as Freshness (Follower.Heartbeat,
// Follower.Freshness, OwnerState.Stale). See heartbeat.go.
package publish
