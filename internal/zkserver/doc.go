// Package zkserver runs real ZooKeeper servers on loopback for herald's
// tests, benchmarks and `herald demo`.
//
// Each server is a plain `java -cp ... QuorumPeerMain zoo.cfg` process from
// the installed ZooKeeper: ZOOKEEPER_CLASSPATH if set, else the jars of
// ZOOKEEPER_HOME, else Debian's zookeeper package in /usr/share/java (see
// FindRuntime). Java comes from JAVA_HOME or PATH.
//
//	c, err := zkserver.Start(ctx, zkserver.Config{Nodes: 3})
//	if err != nil { ... }      // zkserver.IsNotInstalled(err) when Java or ZooKeeper is missing
//	defer c.Close()            // kills every server, removes the temp dir
//	conn, _, err := zk.Connect(c.Addrs(), time.Second)
//
// Start picks free loopback ports from the kernel (client, quorum and
// election port per member), writes DIR/zkN/zoo.cfg and DIR/zkN/data, and
// returns once every member serves and, for an ensemble, one leads.
// Defaults favour fast tests: tickTime 200ms (so sessions may be as short
// as 400ms), sessions up to 60s, no per-address connection limit, all
// four-letter commands allowed, no admin server, no fsync. Each server's
// output goes to DIR/zkN/zookeeper.log; a failed start returns the tail of
// that log in its error.
//
// Fault injection works on one member (a *Server): Stop (SIGTERM), Kill
// (SIGKILL, like a crash), Start (same id, ports and data), Pause and
// Resume (SIGSTOP/SIGCONT, like a hung machine). Cluster.Leader finds the
// current leader through mntr; Server.Mntr, State, WatchCount (wchs) and
// PacketsReceived read the server's own counters, and FourLetter sends any
// four-letter command.
//
// Servers run in their own process group; on Linux the kernel also kills
// them when the process that started them dies, so a crashed test binary
// leaves no ZooKeeper behind (its temp directory stays). That signal
// comes when the starting thread ends, so every server is started from
// one thread that never does: a caller's goroutine locked to its thread
// may return without taking a server with it.
//
// Package zktest wraps Start for tests: ForTest (one cluster per test)
// and Shared (one standalone server per test binary).
package zkserver
