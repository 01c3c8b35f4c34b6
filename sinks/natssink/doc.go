// Package natssink publishes herald events on NATS core subjects and holds
// the connection options every NATS-based sink shares.
//
// Each event goes to herald.<type>.<group tokens> (see publish.Subject),
// for instance herald.leader_elected.jobs.nightly, as a CloudEvents 1.0
// binary-mode message: the attributes in lower-case headers (ce-id, ce-type,
// ce-source, ce-subject, ce-time, ce-specversion, plus herald's ce-recipe,
// ce-term and ce-zxid) and the JSON event as body. A consumer in any
// language subscribes to herald.*.jobs.nightly, herald.leader_elected.>, or
// herald.> and needs no herald code.
//
// Write publishes a batch and flushes it: nil means the server received
// every event. NATS core keeps nothing, so a consumer that was away misses
// events; the JetStream sink (package sinks/jetstream) keeps history and the
// current owner of every group.
//
// Options says how to reach NATS: one URL or several, and at most one way
// to authenticate (user and password, token, NKey seed file, or .creds
// file), with optional TLS (a CA file, a client certificate). Passwords and
// tokens never appear in logs or errors (Redact, Options.Scrub). Once
// connected, the connection reconnects by itself forever with exponential
// backoff; while it is down, Write fails at once (nothing is queued), so the
// pipeline keeps the batch and retries it in order.
package natssink
