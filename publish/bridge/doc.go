// Package bridge is herald's bridge: it observes ZooKeeper elections and
// locks and publishes every change, as typed events, to the sinks (NATS,
// JetStream, Kafka, the audit log). `herald bridge` runs it; tests,
// benchmarks and `herald demo` run it in-process.
//
// # What it does
//
// New checks a Config and builds the bridge and its publish.Pipeline; Run
// connects every sink and opens a ZooKeeper session (each retried with
// backoff, at most Config.ConnectTimeout, then an error naming what was
// tried), then:
//
//   - observes every Watch group with elect.Observe, and every child of
//     every Discover root, with one children watch per root: groups are
//     added and dropped as children appear and disappear;
//   - translates each change (publish.Translate) and publishes the events;
//     the first change of every observer is a snapshot of the group, so a
//     bridge that starts publishes the current state of every group first,
//     then streams;
//   - when an observer says the connection is lost (elect.Unknown), marks
//     the group unknown and publishes nothing for it until the snapshot the
//     observer sends after reconnecting;
//   - when the session expires, opens a new one (retrying until it
//     succeeds) and starts over: every group is snapshotted again. Event ids
//     are deterministic, so what was already published is recognised as a
//     duplicate by JetStream and by consumers.
//
// # High availability
//
// With Config.HAPath, bridges campaign in an herald election at that path
// (their id is Config.Source). Only the leader observes and publishes; the
// others keep their session and their sinks connected and wait. A bridge
// that takes over publishes the snapshot of every group before streaming,
// so consumers miss no state. A bridge that loses leadership (its handle's
// Done, including on a suspended connection) stops publishing at once.
//
// # Stopping
//
// When Run's context ends the bridge stops observing, drains the pipeline
// within Config.DrainTimeout, resigns its HA leadership (after draining, so
// its last events never arrive after the successor's snapshot) and closes
// the session. Events left undelivered are logged and returned as an error
// wrapping publish.ErrUndelivered. Abort stops at once, as a crash would.
//
// # HTTP
//
// Handler (served by Run on Config.HTTPAddr) has /metrics with the
// pipeline's metrics and herald_zk_session_state, herald_bridge_active,
// herald_groups_unknown and herald_groups_observed; /healthz, 200 while the
// process runs; and /readyz, 200 when the session is connected, the bridge
// is active or standby, no observed group is unknown, every sink is
// healthy and, after a stall of the process, the bridge has caught up with
// ZooKeeper, else 503 with a JSON body saying what is not ready.
package bridge
