// Package kafkasink publishes herald events to Kafka with
// github.com/segmentio/kafka-go, and follows them back.
//
// Two topics, both keyed by the group path ("/jobs/nightly", what an
// operator types into kcat):
//
//   - herald.events, the history: every event, in order per group.
//   - herald.owners, compacted: the current owner of each group. The value
//     is the event that made it (leader.elected, leader.ready,
//     lock.acquired); a tombstone (null value) says the group has no owner,
//     and carries the loss event in its herald_event header. Within a batch
//     only each group's final state is written.
//
// A third, herald.bridges (compacted, one partition, created by the first
// WriteHeartbeat), holds each bridge's heartbeat (publish.Heartbeat) keyed
// by its source: whether the owners it wrote are still confirmed.
// FollowOwners reads it and marks each update stale or fresh
// (publish.Freshness), delivering a group again when only that changes.
//
// Records are CloudEvents 1.0 in binary mode: ce_specversion, ce_id,
// ce_source, ce_type, ce_subject, ce_time and herald's ce_recipe, ce_term,
// ce_zxid headers, content-type application/json, the event's JSON as the
// value.
//
// Connect creates missing topics (cleanup.policy=compact for the owners
// topic) and refuses an owners topic that is not compacted. Production
// settings: replication factor 3, min.insync.replicas 2 and some partitions
// (6 is plenty); tests use 3 partitions and 1 replica.
//
// The writer asks for acks from all in-sync replicas, hashes keys to
// partitions as the Java client does (murmur2; Config.Partitioner FNV1a
// keeps the placement of herald before it), waits at most 5 ms to fill a batch, and writes synchronously
// in chunks that each partition appends atomically. A failed Write stops at
// the failed chunk and wraps publish.ErrReconnect; Connect then drains the
// old writer before starting a new one. A re-sent batch may duplicate
// records (with the same ids), never reorder them or leave a hole.
//
// Connected (publish.ConnState) says whether a broker answered the last
// look: from Connect to Close a probe asks the brokers for their metadata
// every Config.ProbeInterval (5 s) on a connection of its own, so an idle
// sink reads not healthy (herald_sink_healthy, /readyz) while no broker
// answers, not only once a write fails.
//
// SASL PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 and TLS (CA, client
// certificate) are configured in Config; passwords never appear in logs or
// errors, which name the brokers tried.
//
// Events and FollowOwners read the topics back from the beginning, then
// live. A publish.Follower drops duplicates and stale terms, so a change
// published twice (a bridge restarted and re-sent its snapshot) is seen
// once. A bridge starting on the sink reads LastReports (the owners topic
// to its end: each group's last owner and zxid) to tell, in each group's
// first snapshot, whether an owner came and went unseen.
package kafkasink
