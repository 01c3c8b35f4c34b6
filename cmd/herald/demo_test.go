package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestDemo is the smoke test: herald demo on a machine without a running
// ZooKeeper starts its own, runs green in well under a minute, and leaves
// no process or temporary file behind.
func TestDemo(t *testing.T) {
	zktest.Shared(t) // skips (or fails under HERALD_REQUIRE_SERVERS=1) when ZooKeeper is not installed
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := l.Addr().String()
	l.Close()
	tmp := t.TempDir()
	began := time.Now()
	p := start(t, []string{"TMPDIR=" + tmp}, "--zk", nobody, "demo")
	code := p.wait(t, 60*time.Second)
	out := p.out.String()
	if code != 0 {
		t.Fatalf("demo exited %d:\n%s", code, out)
	}
	if d := time.Since(began); d > 60*time.Second {
		t.Errorf("demo took %v, want under a minute", d)
	}
	for _, want := range []string{
		"starting one", "leader.elected", "leader.ready", `reason="resigned"`, "SIGKILL",
		`resuming from checkpoint "step=2/6"`, "GROUP", "HELD FOR", "final checkpoint: \"step=6/6\"",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("demo output:\n%s", out)
	}
	left, _ := os.ReadDir(tmp)
	if len(left) != 0 {
		t.Errorf("demo left %d entries in its temp dir (first %s)", len(left), left[0].Name())
	}
	if m := regexp.MustCompile(`/herald-demo/job-\d+`).FindString(out); m != "" {
		if ps, err := exec.Command("pgrep", "-f", m).Output(); err == nil && len(ps) > 0 {
			t.Errorf("processes of the demo still run: %s", ps)
		}
	}
}

// demoConn is a connection to the shared ZooKeeper, closed with the
// test, and whether /herald-demo existed before the test's demo ran.
func demoConn(t *testing.T) (*zk.Conn, bool) {
	t.Helper()
	c, _, err := zk.Connect([]string{zktest.Shared(t).ConnectString()}, 5*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	rootBefore, _, err := c.Exists("/herald-demo")
	if err != nil {
		t.Fatal(err)
	}
	return c, rootBefore
}

// demoLeftovers lists what a demo left in ZooKeeper: its group (named in
// its output), and /herald-demo when it was not there before.
func demoLeftovers(t *testing.T, c *zk.Conn, out string, rootBefore bool) []string {
	t.Helper()
	var left []string
	group := regexp.MustCompile(`/herald-demo/job-\d+`).FindString(out)
	if group == "" {
		t.Fatalf("the demo's output names no group:\n%s", out)
	}
	if ok, _, err := c.Exists(group); err != nil || ok {
		kids, _, _ := c.Children(group)
		left = append(left, fmt.Sprintf("%s %v (%v)", group, kids, err))
	}
	if !rootBefore {
		if ok, _, err := c.Exists("/herald-demo"); err != nil || ok {
			left = append(left, fmt.Sprintf("/herald-demo (%v)", err))
		}
	}
	return left
}

// On a ZooKeeper it did not start, the demo removes the group it made, and
// /herald-demo when it made that; another demo's group there is kept.
func TestDemoRemovesItsGroup(t *testing.T) {
	srv := zktest.Shared(t)
	c, rootBefore := demoConn(t)
	p := start(t, []string{"TMPDIR=" + t.TempDir()}, "--zk", srv.ConnectString(), "demo", "--steps", "3", "--step-time", "100ms")
	if code := p.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("demo exited %d:\n%s", code, p.out)
	}
	out := p.out.String()
	if left := demoLeftovers(t, c, out, rootBefore); len(left) > 0 {
		t.Errorf("the demo left %v in ZooKeeper:\n%s", left, out)
	}

	// Another group below /herald-demo (another demo's) stays, and so
	// does /herald-demo with it.
	if _, err := c.Create("/herald-demo", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	other := fmt.Sprintf("/herald-demo/job-other-%d", time.Now().UnixNano())
	if _, err := c.Create(other, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = c.Delete(other, -1)
		if !rootBefore {
			_ = c.Delete("/herald-demo", -1)
		}
	}()
	p = start(t, []string{"TMPDIR=" + t.TempDir()}, "--zk", srv.ConnectString(), "demo", "--steps", "3", "--step-time", "100ms")
	if code := p.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("demo exited %d:\n%s", code, p.out)
	}
	if left := demoLeftovers(t, c, p.out.String(), true); len(left) > 0 {
		t.Errorf("the demo left %v in ZooKeeper:\n%s", left, p.out)
	}
	if ok, _, err := c.Exists(other); err != nil || !ok {
		t.Errorf("another group below /herald-demo was removed (%v)", err)
	}
}

// Ctrl-C or SIGTERM during the demo: it stops its runners, removes its
// group, says it was interrupted and exits 130 / 143.
func TestDemoInterrupted(t *testing.T) {
	srv := zktest.Shared(t)
	c, rootBefore := demoConn(t)
	for _, tc := range []struct {
		sig   syscall.Signal
		after string // the demo's output when the signal is sent
	}{
		{syscall.SIGINT, "demo: *** SIGKILL"},    // waiting for the next leader
		{syscall.SIGTERM, "took over; when its"}, // waiting for the runners to finish
	} {
		tmp := t.TempDir()
		p := start(t, []string{"TMPDIR=" + tmp}, "--zk", srv.ConnectString(), "demo", "--steps", "40", "--step-time", "200ms")
		p.waitOutput(t, tc.after, 40*time.Second)
		_ = p.cmd.Process.Signal(tc.sig)
		code := p.wait(t, 30*time.Second)
		out := p.out.String()
		said := regexp.MustCompile(`(?m)^herald: .*`).FindAllString(out, -1) // herald's own error, not its runners'
		if code != 128+int(tc.sig) || len(said) != 1 || !strings.Contains(said[0], "demo interrupted") {
			t.Errorf("%v after %q: exit %d, want %d and an interrupted message:\n%s", tc.sig, tc.after, code, 128+int(tc.sig), out)
		}
		if left := demoLeftovers(t, c, out, rootBefore); len(left) > 0 {
			t.Errorf("%v: the demo left %v in ZooKeeper:\n%s", tc.sig, left, out)
		}
		if ps, err := exec.Command("pgrep", "-f", regexp.MustCompile(`/herald-demo/job-\d+`).FindString(out)).Output(); err == nil && len(ps) > 0 {
			t.Errorf("%v: processes of the demo still run: %s", tc.sig, ps)
		}
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("%v: the demo left %d entries in its temp dir", tc.sig, len(left))
		}
	}
}

// TestDemoOutputClosed: `herald demo | head -2`: the demo finds its output
// gone, stops what it started, removes its group, and exits 141 as a
// shell reports SIGPIPE, rather than dying of it with its group left in
// ZooKeeper.
func TestDemoOutputClosed(t *testing.T) {
	srv := zktest.Shared(t)
	c, rootBefore := demoConn(t)
	cmd := exec.Command(heraldBin, "--zk", srv.ConnectString(), "demo", "--steps", "20", "--step-time", "200ms")
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Read until the group is named, then go away, as head does.
	var seen strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !regexp.MustCompile(`/herald-demo/job-\d+`).MatchString(seen.String()) {
		seen.WriteString(sc.Text() + "\n")
	}
	_ = stdout.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the demo went on for 60 s with its output closed; stderr:\n%s", stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGPIPE) {
		t.Errorf("demo with its output closed: exit %d (%v), want %d; stderr:\n%s", code, cmd.ProcessState, 128+int(syscall.SIGPIPE), stderr.String())
	}
	if left := demoLeftovers(t, c, seen.String(), rootBefore); len(left) > 0 {
		t.Errorf("the demo left %v in ZooKeeper; stderr:\n%s", left, stderr.String())
	}
}
