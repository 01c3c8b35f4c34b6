package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// heraldBin is the herald binary built once for this test binary: every
// test runs it as a user would, as a process.
var heraldBin string

func TestMain(m *testing.M) {
	// A command a test starts in-process is held by this binary as its
	// gate (see gated), as herald's own binary holds it.
	if len(os.Args) > 1 && os.Args[1] == gateArg {
		os.Exit(runGate(os.Args[2:], os.Stderr))
	}
	dir, err := os.MkdirTemp("", "herald-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	heraldBin = filepath.Join(dir, "herald")
	build := exec.Command("go", "build", "-o", heraldBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build herald:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	zktest.SharedPrepare(openSharedRoots)
	code := m.Run()
	if err := zktest.CloseShared(); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, "close shared ZooKeeper:", err)
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuf is a buffer a process writes to while the test reads it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a herald process started by a test.
type proc struct {
	cmd  *exec.Cmd
	out  *syncBuf // stdout and stderr, with the child's output
	done chan struct{}
	code int
}

// start runs herald with args and env (added to the test's environment).
// It is killed, with its process group, when the test ends.
func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	return startBin(t, heraldBin, env, args...)
}

// startBin is start with another herald binary.
func startBin(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), out: &syncBuf{}, done: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), "HERALD_BIN="+heraldBin), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = ownProcessGroup()
	// A process herald leaves behind may hold the output open; herald's
	// own exit is what the tests wait for.
	p.cmd.WaitDelay = 2 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start herald %v: %v", args, err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.code = exitCode(p.cmd.ProcessState)
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = signalPID(-p.cmd.Process.Pid, sigCont)
		_ = signalPID(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		if t.Failed() {
			t.Logf("herald %s:\n%s", strings.Join(args, " "), p.out)
		}
	})
	return p
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		t.Fatalf("herald %v still running after %v; output:\n%s", p.cmd.Args[1:], d, p.out)
		return -1
	}
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitOutput waits until the output contains s.
func (p *proc) waitOutput(t *testing.T, s string, d time.Duration) {
	t.Helper()
	if err := waitFor(d, func() bool { return strings.Contains(p.out.String(), s) }); err != nil {
		t.Fatalf("output of herald %v never contained %q (%v); output:\n%s", p.cmd.Args[1:], s, err, p.out)
	}
}

// heraldRun runs herald to completion and returns stdout, stderr and the
// exit code.
func heraldRun(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, heraldBin, args...)
	cmd.Env = append(append(os.Environ(), "HERALD_BIN="+heraldBin), env...)
	return runToEnd(t, cmd, args)
}

// runToEnd runs cmd, a herald started one way or another with args, to
// completion and returns stdout, stderr and the exit code: an exit code
// is an answer the tests check, any other failure to run is fatal.
func runToEnd(t *testing.T, cmd *exec.Cmd, args []string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &ee):
		return stdout.String(), stderr.String(), exitCode(ee.ProcessState)
	}
	t.Fatalf("herald %v: %v", args, err)
	return "", "", -1
}

// waitFor polls cond until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// alive reports whether a process with pid exists (and is not a zombie of
// ours: these are grandchildren, reaped by init).
func alive(pid int) bool { return signalPID(pid, 0) == nil }

// uniq returns a ZooKeeper path unique to the test.
func uniq(t *testing.T) string {
	return fmt.Sprintf("/herald-cli-test/%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), time.Now().UnixNano())
}

// sharedOpen is what openTestRoot makes: where uniq's groups go, and
// herald's default parent and session root (elect.DefaultSessionRoot).
var sharedOpen = []string{"/herald-cli-test", "/herald", "/herald/sessions"}

// openSharedRoots makes sharedOpen open to all on the shared server
// before any test runs (see zktest.SharedPrepare): a copy with
// credentials makes /herald closed to everyone else's creates, and a
// test that ran first so would refuse the session root, or a bridge's
// sources root, to every later test without the same credentials.
func openSharedRoots(c *zkserver.Cluster) error {
	conn, _, err := zk.Connect(c.Addrs(), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, p := range sharedOpen {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("making %s open: %w", p, err)
		}
	}
	return nil
}

// openTestRoot makes /herald-cli-test, where uniq's groups go, open to all
// before a test's herald logs in: herald gives the parents it creates its
// identity's ACL, and a root created that way would refuse every later
// test that runs without the same credentials.
func openTestRoot(t *testing.T) {
	t.Helper()
	conn := rawZK(t)
	// The default session root too: made first by a copy with
	// credentials, it would admit that identity alone, and every later
	// test's copies without credentials would keep no session node there.
	for _, p := range sharedOpen {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
}
