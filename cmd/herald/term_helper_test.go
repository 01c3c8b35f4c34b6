//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestHelperStartedAtSIGTERMIsStoppedBeforeTheNextOwner: a process of the
// owner's command answers the SIGTERM that stops it by starting a helper
// in a session of its own (setsid, out of the process group) and exiting
// at once; the helper keeps the command's flock. Found by an adversarial
// test, two ways:
//   - The owner's node is deleted by hand; its runner hears and stops the
//     command. herald, the command's subreaper, adopts the helper, but it
//     read the strays before the group: a helper that left the group after
//     the first read, its parent gone before the second, was in neither,
//     and the next owner's command ran beside it (4 runs in 8). Three
//     copies run at once, so the old order passes one run in eight at most.
//   - The runner is killed with kill -9; its watchdog stops the command.
//     The helper, started after the runner's death, went to init, out of
//     any tree, and the releaser released at once: the next command ran
//     beside it every time. It carries the command's HERALD_RUN_ID, and is
//     now stopped with the command.
func TestHelperStartedAtSIGTERMIsStoppedBeforeTheNextOwner(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
	for _, how := range []string{"deleted-1", "deleted-2", "deleted-3", "kill-9"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel() // waits on processes, not the CPU
			env, read, child := helperAtSIGTERM(t)
			g := uniq(t)
			copyOf := func(id, command string) *proc {
				return start(t, env, append(zk, "lock", "--lock", g, "--id", id, "--grace", "10s", "--", "sh", "-c", child+command)...)
			}
			first := copyOf("copy-1", `sh "$DIR/onterm.sh" & wait`)
			if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") == 1 }); err != nil {
				t.Fatalf("copy-1's command never started: %q\n%s", read(), first.out)
			}
			second := copyOf("copy-2", `trap "" TERM; sleep 60 & wait`)
			waitQueued(t, zk, g, 2, "copy-2 never queued")
			if how == "kill-9" {
				if err := first.cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
			} else {
				deleteLowest(t, g)
			}
			if err := waitFor(30*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
				t.Fatalf("copy-2's command never started: %q\n%s\n%s", read(), first.out, second.out)
			}
			if strings.Contains(read(), "OVERLAP") {
				t.Errorf("copy-2's command started while the helper copy-1's command started at its SIGTERM held the flock:\n%s\ncopy-1:\n%s", read(), first.out)
			}
		})
	}
}

// scene is the set-up of a command that leaves something behind at its
// SIGTERM: onterm.sh answers SIGTERM by starting helper.sh in a session
// of its own and exiting; helper.sh notes its pid (killed when the test
// ends, until then runs on the stop file is checked). child opens a
// command: it takes the flock the helper inherits, marking an overlap and
// its start in the marks file.
type scene struct {
	dir, marks, child string
	env               []string
}

// newScene writes helper.sh with body and onterm.sh; with ignoreTerm, the
// helper starts with SIGTERM ignored (set before the fork: the helper
// must not die of a SIGTERM that comes before its own trap).
func newScene(t *testing.T, body string, ignoreTerm bool) *scene {
	t.Helper()
	s := &scene{dir: t.TempDir()}
	s.marks = filepath.Join(s.dir, "marks")
	s.env = []string{"MARKS=" + s.marks, "DIR=" + s.dir}
	s.child = `exec 9>>"$MARKS.lock"; flock -n 9 || echo "OVERLAP $HERALD_ID" >> "$MARKS"; echo "start $HERALD_ID" >> "$MARKS"; `
	ignore := ""
	if ignoreTerm {
		ignore = `trap "" TERM; `
	}
	s.script(t, "helper.sh", body+"\n")
	s.script(t, "onterm.sh", `trap '`+ignore+`setsid sh "$DIR/helper.sh" & exit 0' TERM; while :; do sleep 0.1; done`+"\n")
	t.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(s.dir, "stop"), nil, 0o644)
		for range 20 {
			for _, f := range s.pids() {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	return s
}

func (s *scene) script(t *testing.T, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.dir, name), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// read is the marks so far.
func (s *scene) read() string { b, _ := os.ReadFile(s.marks); return string(b) }

// pids is the pids the helpers noted so far.
func (s *scene) pids() []string {
	b, _ := os.ReadFile(s.marks + ".pids")
	return strings.Fields(string(b))
}

// helperAtSIGTERM is a scene, for herald without a cgroup, whose helper
// runs until killed.
func helperAtSIGTERM(t *testing.T) (env []string, read func() string, child string) {
	t.Helper()
	s := newScene(t, `echo $$ >> "$MARKS.pids"; while :; do sleep 0.1; done`, false)
	// The tracking by /proc, what herald has where it cannot make a
	// cgroup: in one, the helper could not hide (see
	// TestHopperIsStoppedBeforeTheNextOwner).
	return append(s.env, cgroupVar+"=off"), s.read, s.child
}

// TestUnreapedDeadRunnersHelperIsStopped: the kill-9 case above, with a
// runner whose parent never reaps it (a program that starts herald and
// does not wait). The dead runner stays a zombie, which the watchdog took
// for a live runner: it never looked for the command's HERALD_RUN_ID, the
// helper lived on, and the next copy started beside it once the dead
// session expired (found by an adversarial test). The releaser now kills
// what carries the id, and a zombie runner counts as dead.
func TestUnreapedDeadRunnersHelperIsStopped(t *testing.T) {
	t.Parallel() // waits on processes, not the CPU
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
	env, read, child := helperAtSIGTERM(t)
	g := uniq(t)
	var q []string
	for _, a := range append(append([]string{}, zk...), "lock", "--lock", g, "--id", "copy-1", "--grace", "10s", "--", "sh", "-c", child+`sh "$DIR/onterm.sh" & wait`) {
		q = append(q, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	dir := t.TempDir()
	out, pidFile := filepath.Join(dir, "copy-1.out"), filepath.Join(dir, "runner.pid")
	wrapper := exec.Command("sh", "-c", `"$HERALD_BIN" `+strings.Join(q, " ")+` >"$OUT" 2>&1 & echo $! > "$PIDFILE"; exec sleep 300`)
	wrapper.Env = append(append(os.Environ(), "HERALD_BIN="+heraldBin, "OUT="+out, "PIDFILE="+pidFile), env...)
	wrapper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := wrapper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-wrapper.Process.Pid, syscall.SIGKILL); _ = wrapper.Wait() })
	firstOut := func() string { b, _ := os.ReadFile(out); return string(b) }
	if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") == 1 }); err != nil {
		t.Fatalf("copy-1's command never started: %q\n%s", read(), firstOut())
	}
	second := start(t, env, append(zk, "lock", "--lock", g, "--id", "copy-2", "--grace", "10s", "--", "sh", "-c", child+`trap "" TERM; sleep 60 & wait`)...)
	waitQueued(t, zk, g, 2, "copy-2 never queued")
	b, _ := os.ReadFile(pidFile)
	runner, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || runner <= 1 {
		t.Fatalf("no runner pid in %q", b)
	}
	if err := syscall.Kill(runner, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(30*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
		t.Fatalf("copy-2's command never started: %q\n%s\n%s", read(), firstOut(), second.out)
	}
	if strings.Contains(read(), "OVERLAP") {
		t.Errorf("copy-2's command started while the helper of copy-1's command held the flock:\n%s\ncopy-1:\n%s", read(), firstOut())
	}
}
