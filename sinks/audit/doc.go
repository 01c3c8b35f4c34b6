// Package audit is herald's audit log: an append-only file of JSON lines,
// one publish.Event per line, that survives crashes and rotates by size.
//
// The Sink writes each batch with one write and one fsync, so a batch that
// Write acknowledged is on disk. A crash can still leave a torn last line
// (a write cut short, or a tail of zeros on some file systems); Connect
// finds it and truncates the file back to its last complete, valid line,
// logging how many bytes it dropped, so the next batch never lands behind
// garbage and earlier lines are never touched. A failed write is undone the
// same way before Write returns its error.
//
// When the file would grow past the size limit (64 MiB unless set) it is
// renamed with a six-digit sequence (audit.log.000001, audit.log.000002,
// ...; lower is older) and a fresh file is started. Files are created with
// mode 0640 in a directory created with mode 0750.
//
// Connected (publish.ConnState) says whether the log can still be written:
// from Connect to Close the sink creates, writes and removes a small file
// beside the log and opens the log for appending every ProbeInterval (5 s),
// so a directory removed, unmounted, full or read-only reads not healthy
// while nothing is written. A log removed or replaced behind the sink's
// back is not appended to: the next Write starts a new one at its path.
//
// The Sink is also a publish.HeartbeatSink: it keeps its bridge's latest
// heartbeat in a file beside the log (HeartbeatPath), replaced whole, so
// that a reader of the log can tell an owner still confirmed from one
// whose bridge stopped, stood by or died (ReadHeartbeat).
//
// The Reader reads the rotated files in order and then the live one. It
// skips a torn last line and reports a malformed line in the middle as a
// *LineError naming file and line, after which reading continues.
//
// History turns events from any source (this log, JetStream, Kafka) into
// tenures, one row per owner and term, stating only what the events
// observed: an end no observer saw is the last time the owner was seen
// holding, marked as such, never a guess across the stretch after it.
// Merge merges several bridges' logs into one sequence for History, and
// WriteTable renders tenures the same way for every source; `herald
// history` is built on these.
package audit
