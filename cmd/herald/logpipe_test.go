package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startErr is start with herald's standard error the write end of a pipe
// the test holds the read end of (and reads, or not); the command's
// standard output goes to the returned proc's out.
func startErr(t *testing.T, args ...string) (*proc, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: exec.Command(heraldBin, args...), out: &syncBuf{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "HERALD_BIN="+heraldBin)
	p.cmd.Stdout, p.cmd.Stderr = p.out, w
	p.cmd.SysProcAttr = ownProcessGroup()
	p.cmd.WaitDelay = 2 * time.Second // a grandchild left may hold the output open
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	go func() {
		_ = p.cmd.Wait()
		p.code = exitCode(p.cmd.ProcessState)
		close(p.done)
	}()
	t.Cleanup(func() {
		go func() { _, _ = io.Copy(io.Discard, r) }() // unblock it, should the test fail
		_ = signalPID(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		r.Close()
	})
	return p, r
}

// pidOut is the pid the command printed as "name=PID".
func pidOut(t *testing.T, p *proc, name string) int {
	t.Helper()
	pid, err := strconv.Atoi(outMatch(t, p, name+`=(\d+)`))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = signalPID(pid, syscall.SIGKILL) })
	return pid
}

// outMatch waits for the command to print re and returns its group.
func outMatch(t *testing.T, p *proc, re string) string {
	t.Helper()
	var m []string
	if err := waitFor(20*time.Second, func() bool {
		m = regexp.MustCompile(re).FindStringSubmatch(p.out.String())
		return m != nil || p.exited()
	}); err != nil || m == nil {
		t.Fatalf("the command never printed %s; output:\n%s", re, p.out)
	}
	return m[1]
}

// TestBlockedStderrDoesNotHoldUpTheLoss: herald's standard error is a
// pipe nobody reads (Ctrl-S on the terminal, `| less` paused, a stuck log
// shipper), full. The leader's node is deleted: the command is stopped
// within moments all the same. Before, the loss path blocked on its log
// line ("lost leadership ...; stopping the child"), the watchdog kept
// hearing herald's heartbeat, and the command ran on beside the next owner
// for as long as the pipe stayed full.
func TestBlockedStderrDoesNotHoldUpTheLoss(t *testing.T) {
	g := uniq(t)
	p, _ := startErr(t, append(zkFlags(t), "run", "--election", g, "--", "sh", "-c",
		`head -c 200000 /dev/zero >&2 & echo "node=$HERALD_NODE"; echo "pid=$$"; while :; do sleep 0.05; done`)...)
	pid := pidOut(t, p, "pid")
	node := outMatch(t, p, `node=(\S+)`)
	time.Sleep(300 * time.Millisecond) // the pipe fills
	if err := rawZK(t).Delete(g+"/"+node, -1); err != nil {
		t.Fatal(err)
	}
	// A sixth of the 1 s session timeout, and room for a busy machine.
	if err := waitFor(2*time.Second, func() bool { return !running(pid) }); err != nil {
		t.Fatalf("the command still runs 2s after its leader's node was deleted, herald's standard error blocked")
	}
}

// running reports whether pid runs: exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || !strings.HasPrefix(string(b[i:]), ") Z")
}

// TestStderrGoneHandsOver: the reader of herald's standard error goes
// away (`herald run ... 2>&1 | tee log`, tee killed). The next log line
// finds the pipe broken: herald stops the command and gives the
// leadership back, as on SIGHUP. Before, Go's runtime ended herald with
// SIGPIPE there: its node stayed, owned by a dead process, for a whole
// session timeout.
func TestStderrGoneHandsOver(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zktestFlags(t, "10s")
	g := uniq(t)
	p, r := startErr(t, append(zk, "run", "--election", g, "--", "sh", "-c", `echo "pid=$$"; exec sleep 60`)...)
	pid := pidOut(t, p, "pid")
	r.Close()
	// A log line: herald says so when its command is stopped.
	if err := signalPID(pid, sigStop); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 10*time.Second)
	if out, _, code := heraldRun(t, nil, append(zk, "who", g)...); code != exitNoOwner {
		t.Fatalf("who right after herald's standard error went: exit %d, want %d (released):\n%s", code, exitNoOwner, out)
	}
	if running(pid) {
		t.Fatal("the command still runs")
	}
}

// zktestFlags are zkFlags with another session timeout.
func zktestFlags(t *testing.T, session string) []string {
	zk := zkFlags(t)
	for i := range zk {
		if zk[i] == "--session-timeout" {
			zk[i+1] = session
		}
	}
	return zk
}

// TestWatchdogStopsTheCommandWhateverItsStderr: the runner is killed
// while its standard error, which the watchdog shares, is a pipe nobody
// reads any more. The watchdog still stops what the command started.
// Before, it said why first, and SIGPIPE ended it there: the grandchild
// ran on.
func TestWatchdogStopsTheCommandWhateverItsStderr(t *testing.T) {
	g := uniq(t)
	p, r := startErr(t, append(zkFlags(t), "run", "--election", g, "--", "sh", "-c", `sleep 60 & echo "grandchild=$!"; wait`)...)
	pid := pidOut(t, p, "grandchild")
	// The runner starts its watchdog right after the command, and says
	// so: killed before, it leaves no watchdog, which is not this test's
	// case (a busy machine got there first).
	started := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "child started") {
				started <- true
				return
			}
		}
		started <- false
	}()
	select {
	case ok := <-started:
		if !ok {
			t.Fatal("the runner's standard error ended before it said the child started")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the runner never said the child started")
	}
	r.Close()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 5*time.Second)
	if err := waitFor(5*time.Second, func() bool { return !running(pid) }); err != nil {
		t.Fatal("the command's grandchild still runs 5s after its runner was killed, its standard error a broken pipe")
	}
}

// gate is a writer that blocks until opened.
type gate struct {
	open chan struct{}
	out  syncBuf
}

func (g *gate) Write(p []byte) (int, error) {
	<-g.open
	return g.out.Write(p)
}

// TestLogPipeNeverBlocks: while its writer blocks, the log takes every
// line at once, keeps logQueue of them and counts the rest, which it says
// once the writer takes lines again.
func TestLogPipeNeverBlocks(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	l := newLogPipe(g)
	done := make(chan struct{})
	go func() {
		for i := 0; i < logQueue+100; i++ {
			_, _ = l.Write([]byte("line\n"))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("writing to the log blocked while its writer did")
	}
	close(g.open)
	l.flush(5 * time.Second)
	out := g.out.String()
	dropped := 0 // said once or more, as the writer takes lines again
	for _, m := range regexp.MustCompile(`herald: (\d+) log lines dropped`).FindAllStringSubmatch(out, -1) {
		dropped += mustAtoi(m[1])
	}
	if n := strings.Count(out, "line\n"); dropped == 0 || n < logQueue || n+dropped != logQueue+100 {
		t.Fatalf("after %d lines with the writer blocked: %d written, %d said dropped", logQueue+100, n, dropped)
	}
}
