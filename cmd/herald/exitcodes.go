package main

// Exit codes of herald itself. A child's exit code (run, lock) is passed
// through unchanged, and 128+N when the child died of signal N; run and
// lock stopped by signal N before the child started exit 128+N too
// (interrupted).
const (
	exitFailure = 1
	exitUsage   = 2
	// exitNotLeader: leadership or the lock was lost while the child ran
	// (the child was stopped), or a fenced checkpoint was rejected because
	// its leader is gone.
	exitNotLeader = 3
	// exitStale: herald who --nats/--kafka read a value no bridge has
	// confirmed within its bound (or whose bridge stopped): it may no
	// longer be true.
	exitStale = 4
	// exitNoOwner: herald who found the group but no owner (no leader,
	// lock free). A server herald cannot reach is exitUnreachable; any
	// other failure to read is exitFailure.
	exitNoOwner = 5
	// exitUnreachable (EX_UNAVAILABLE): herald who could not reach the
	// server it was to ask (ZooKeeper, NATS, Kafka).
	exitUnreachable = 69
	// exitConfig (EX_CONFIG): herald bridge found a sink's settings on its
	// server that cannot work (a Kafka owners topic that does not only
	// compact, JetStream replicas the servers cannot place).
	exitConfig = 78
	// exitTempFail (EX_TEMPFAIL): herald lock gave up waiting for the lock.
	exitTempFail = 75
	// exitCannotExec and exitNotFound follow the shell: the child command
	// exists but cannot be executed, or does not exist.
	exitCannotExec = 126
	exitNotFound   = 127
)
