package integration_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// curatorBench is testdata/CuratorBench.java running: one JVM holding the
// Curator side of BenchmarkLockHandoff, its clients and sessions, for the
// whole benchmark.
type curatorBench struct {
	p   *peer
	pid int
}

// startCuratorBench compiles and starts CuratorBench with clients Curator
// clients, each with its own session of the given timeout.
//
// The JVM runs as a fair peer for a throughput benchmark: with both JIT
// compilers (no -XX:TieredStopAtLevel=1, which the test peers use to start
// fast), and a fixed heap with the serial collector, which on this 2-core
// machine spends the least CPU next to the server and the Go clients (the
// loop allocates little; young collections of a 256 MB heap are rare and
// short). The benchmark warms it up with an unmeasured slice before the
// measured ones, so C2 has compiled Curator's and the ZooKeeper client's
// hot paths before they count.
func startCuratorBench(b *testing.B, servers string, sessionTimeout time.Duration, clients int) *curatorBench {
	b.Helper()
	java, classPath := compileCurator(b, "CuratorBench")
	cmd := exec.Command(java, "-XX:+UseSerialGC", "-Xms256m", "-Xmx256m", "-XX:-UsePerfData", "-Xshare:auto",
		"-cp", classPath,
		"CuratorBench", servers, strconv.FormatInt(sessionTimeout.Milliseconds(), 10), strconv.Itoa(clients))
	p := startPeer(b, "curator bench", cmd)
	// Close the sessions before the process is killed, so that they do
	// not linger on the server the later benchmarks measure.
	b.Cleanup(func() {
		p.send("quit")
		p.expect("bye", 30*time.Second)
	})
	return &curatorBench{p: p, pid: cmd.Process.Pid}
}

// run has every client take and give back the lock on path for window, and
// returns the cycles completed, the time they took (as the JVM measured
// it, from the start of the loops until the last one stopped) and the CPU
// the JVM used meanwhile.
func (c *curatorBench) run(b *testing.B, path string, window time.Duration) (int64, time.Duration, time.Duration) {
	b.Helper()
	cpu0 := procCPU(b, c.pid)
	c.p.send(fmt.Sprintf("run %s %d", path, window.Milliseconds()))
	f := c.p.expect("cycles", window+time.Minute)
	cpu1 := procCPU(b, c.pid)
	if len(f) != 2 {
		b.Fatalf("curator bench: bad cycles line %q", f)
	}
	n, err1 := strconv.ParseInt(f[0], 10, 64)
	ns, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("curator bench: bad cycles line %q", f)
	}
	return n, time.Duration(ns), cpu1 - cpu0
}

// procCPU is the CPU time (user and system) process pid has used so far,
// from /proc/PID/stat, in USER_HZ ticks (100 a second on Linux).
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		b.Fatalf("CPU time of process %d: %v", pid, err)
	}
	// After the command name (in parentheses) come state, then 10 more
	// fields, then utime and stime.
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		b.Fatalf("CPU time of process %d: unexpected stat %q", pid, s)
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatalf("CPU time of process %d: %q: %v", pid, v, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
