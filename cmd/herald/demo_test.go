package main

import (
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

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
