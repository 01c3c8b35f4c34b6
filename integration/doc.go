// Package integration holds herald's end-to-end tests and benchmarks. It
// has no code of its own: everything lives in _test.go files and runs
// against real servers (ZooKeeper launched by internal/zkserver, an
// embedded nats-server, an in-process kfake Kafka) and real foreign
// clients.
//
// # Foreign recipes (go test ./integration/, part of make test)
//
// elect.Observe and elect.ReadGroup are pointed at groups written by other
// ZooKeeper clients running here, each participant with its own session:
//
//   - Apache Curator 5.4 LeaderLatch and InterProcessMutex: a small Java
//     program, testdata/CuratorPeer.java, compiled with javac into the
//     test's temporary directory and run once per test with Debian's jars
//     from /usr/share/java;
//   - Kazoo 2.8 Election and Lock: testdata/kazoo_peer.py, run with
//     /usr/bin/python3 and python3-kazoo;
//   - go-zookeeper's zk.Lock, in process;
//   - the seeds' names made by hand ("candidate-<sessionID>_", "lock-", "n_").
//
// Both peer programs read commands on stdin ("join PATH ID", "leave ID",
// "lock PATH ID", "unlock ID") and answer on stdout. The tests check the
// owner (and the id the peer stores in the node), candidates joining and
// leaving, the owner changing when it leaves or its process is killed, and
// the recipe, guessed or given with elect.AsRecipe; one runs herald
// candidates and a Curator latch on different groups at once. A missing
// java, Curator jar or Kazoo skips these tests, and fails them when
// HERALD_REQUIRE_SERVERS=1.
//
// # Shared groups (part of make test)
//
// The same peers queue in one group with herald (shared_group_test.go):
// every participant logs its own acquire and release ("queued", "acq",
// "rel" with wall-clock nanoseconds, logged after acquiring and before
// releasing, so logged tenures lie inside the true ones), and a checker
// fails on any overlap and on a participant that never got its turn. The
// peers also take "hold KIND PATH ID", "release ID", "drop ID", "loop KIND
// PATH ID MINMS MAXMS DURATIONMS" and, for Curator, "revoke PATH NODE".
// TestSharedGroupPairs runs every herald form beside every peer in both
// orders, TestWriteToHolderNode writes the holder's node from a third
// session, TestSharedGroupMix runs random mixes; TestChaosSharedGroupMix
// (make chaos) runs them for HERALD_CHAOS_DURATION.
//
// TestEnsembleFailover (also part of make test) kills, on a 3-node
// ensemble, the member the leading herald candidate talks to and then the
// ensemble's leader, checking that no two handles ever hold at once.
//
// # Benchmarks (make bench)
//
//	HERALD_REQUIRE_SERVERS=1 go test -run '^$' -bench . -benchtime 1x -timeout 45m ./integration/
//
// Each Benchmark function makes its whole measurement once and prints a
// table (herald's figure, the peer's, the ratio, the target and whether it
// was met) and reports the figures with b.ReportMetric. Targets are never
// asserted: the machine is shared and noisy. All benchmarks of a run share
// one ZooKeeper server.
//
//   - BenchmarkLockHandoff: handoffs/s, 10 clients, one lock, herald vs
//     go-zookeeper's zk.Lock.
//   - BenchmarkElectionHandoff: handoff latency with 50 candidates against
//     the raw delete-to-watch floor, and ZooKeeper packets per handoff.
//   - BenchmarkChangeToNATS, BenchmarkChangeToKafka: ZooKeeper change to a
//     consumer receiving the event through a bridge.
//   - BenchmarkHerd: 1,000 consumers on NATS behind one bridge vs 1,000
//     ZooKeeper sessions watching directly: packets per change, time until
//     all are informed.
//   - BenchmarkSinkThroughput, BenchmarkObserverMemory: events/s per sink,
//     heap per observed group with 10,000 groups.
//
// Packets are counted with mntr's zk_packets_received; the mntr request is
// itself one packet and idle pings are measured and subtracted.
//
// # Chaos (make chaos)
//
//	HERALD_CHAOS=1 HERALD_CHAOS_DURATION=2m go test -run TestChaos -v -timeout 30m ./integration/
//
// Ten herald lock contenders on a 3-node ensemble, through fault proxies,
// write to a fenced resource while members are killed and restarted (the
// ensemble leader among them), connections are cut and a member is paused
// with SIGSTOP. The test fails on two holders at once, a write with a stale
// term, or the lock no longer changing hands. Without HERALD_CHAOS=1 it is
// skipped.
package integration
