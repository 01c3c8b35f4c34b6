// Package jetstream is herald's JetStream sink and the consumer side that
// reads what it stores.
//
// The sink (New, Sink) keeps two things:
//
//   - the stream HERALD on herald.>: every event, as the NATS core sink
//     publishes it (subject herald.<type>.<group tokens>, CloudEvents
//     headers ce-*, JSON body), with the event id as Nats-Msg-Id so that an
//     event published again within the duplicate window (a bridge's
//     snapshot after a restart, two bridges during a takeover) is stored
//     once. A group's events reach the stream in order even when a Write
//     fails halfway: each is acknowledged before the group's next is sent.
//
//   - the KV bucket herald_owners: key = group tokens (publish.Tokens),
//     value = the JSON Owner (participant, term, zxid, recipe, since,
//     ready). The key is deleted when the group has no owner. Each Write
//     folds a group's events into one compare-and-set on the key's
//     revision, so a loss followed by the next election in one batch never
//     shows the group ownerless, and a lower term never overwrites a higher
//     one. Delete markers carry the retired term in a Herald-Term header, so
//     a late event about a gone owner cannot bring it back either, and the
//     bridge that wrote them (Herald-Source, and in the body).
//
//   - the KV bucket herald_bridges (created by the first WriteHeartbeat):
//     key = publish.BridgeKey(source), value = the bridge's heartbeat
//     (publish.Heartbeat), which says whether the owners it wrote are
//     still confirmed.
//
// Consumers use Follow (the owner of one group or all, from the bucket: the
// current value first, then changes, each marked stale or fresh by the
// heartbeats) or Events (the stream through an ordered consumer, from the
// start or from a time, with duplicates and stale terms dropped by
// publish.Follower). Both re-establish themselves
// after a disconnect or a server restart and deliver on a channel that
// never drops: a slow reader slows them down.
//
// A bridge starting on the sink reads LastReports (each group's last owner
// and zxid in the bucket, whichever bridge wrote it) to tell, in each
// group's first snapshot, whether an owner came and went unseen.
//
// Connection options (URL, credentials, TLS, reconnect backoff) are
// natssink.Options, shared with the NATS core sink.
package jetstream
