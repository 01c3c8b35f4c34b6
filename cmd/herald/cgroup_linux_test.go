//go:build linux

package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// needCgroup fails the test (skips it, outside make test) where herald
// cannot make a command's cgroup: cgroup v2 not mounted or not writable.
// With HERALD_CGROUP=off in the tests' environment, which the herald
// processes they start inherit, it returns false instead: the tests then
// show what herald does without a cgroup.
func needCgroup(t *testing.T) (on bool) {
	t.Helper()
	if cgroupsOff() {
		return false
	}
	path, dir, err := commandCgroup("probe-" + newRunID())
	if err != nil {
		if os.Geteuid() != 0 && errors.Is(err, fs.ErrPermission) {
			// What herald does then, it does in every other test.
			t.Skipf("herald may make no cgroup here (%v): its cgroup tests run as root, as make test does in CI", err)
		}
		if os.Getenv(zktest.RequireEnv) == "1" {
			t.Fatalf("herald cannot make a command's cgroup here (%v): run the tests as root, or in a systemd unit or scope with Delegate=yes", err)
		}
		t.Skipf("herald cannot make a command's cgroup here: %v (set %s=1 to fail instead)", err, zktest.RequireEnv)
	}
	dir.Close()
	removeCgroup(path)
	return true
}

// inCgroupSaid fails the test unless out, a runner's output, says its
// command runs in a cgroup, where on.
func inCgroupSaid(t *testing.T, on bool, out string) {
	t.Helper()
	if on && !strings.Contains(out, "cgroup=/") && !strings.Contains(out, `cgroup="/`) {
		t.Fatalf("the command runs in no cgroup of its own:\n%s", out)
	}
}

// TestHopperIsStoppedBeforeTheNextOwner: at its SIGTERM, the owner's
// command starts, in a session of its own, a process that ignores SIGTERM
// and changes its pid every millisecond: each generation starts the next
// and exits. Every generation keeps the command's flock. Found by an
// adversarial test: a look at /proc reads the processes one by one, and a
// generation started after the look passed its pid, its parent gone
// before the look reached that, is in no look; most runs ended the
// command's stop with a generation alive, and the next owner's command
// ran beside it. In its cgroup the command cannot hide: the kernel says
// when nothing of it is left, and kills all of it at once.
func TestHopperIsStoppedBeforeTheNextOwner(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	on := needCgroup(t)
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
	for _, how := range []string{"deleted", "kill-9"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel() // waits on processes, not the CPU
			s := newScene(t, `[ -e "$DIR/stop" ] && exit 0; echo $$ >> "$MARKS.pids"; sleep 0.001; sh "$DIR/helper.sh" &`, true)
			first := handOver(t, zk, s, how, "2s", func(args []string) *proc { return start(t, s.env, args...) })
			inCgroupSaid(t, on, first.out.String())
			hops := func() int { return len(s.pids()) }
			if hops() < 10 {
				t.Errorf("the hopper made %d generations only: it did not hop as this test means it to", hops())
			}
			n := hops()
			time.Sleep(300 * time.Millisecond)
			if m := hops(); m != n {
				t.Errorf("the hopper still runs after copy-2's command started (%d generations, then %d)", n, m)
			}
		})
	}
}

// handOver runs two copies of `herald lock` in one group with scene s's
// command, copy-1 started by first given its arguments, takes ownership
// from copy-1 (how: "deleted" by hand, or "kill-9" of its runner) once
// copy-2 queued, waits for copy-2's command to start, and fails the test
// if it started while what copy-1's command left behind held the flock.
func handOver(t *testing.T, zk []string, s *scene, how, grace string, first func(args []string) *proc) *proc {
	t.Helper()
	g := uniq(t)
	args := func(id, command string) []string {
		return append(append([]string{}, zk...), "lock", "--lock", g, "--id", id, "--grace", grace, "--", "sh", "-c", s.child+command)
	}
	one := first(args("copy-1", `sh "$DIR/onterm.sh" & wait`))
	if err := waitFor(20*time.Second, func() bool { return strings.Count(s.read(), "start ") == 1 }); err != nil {
		t.Fatalf("copy-1's command never started: %q\n%s", s.read(), one.out)
	}
	two := start(t, s.env, args("copy-2", `sleep 60`)...)
	waitQueued(t, zk, g, 2, "copy-2 never queued")
	if how == "kill-9" {
		if err := one.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
	} else {
		deleteLowest(t, g)
	}
	if err := waitFor(40*time.Second, func() bool { return strings.Count(s.read(), "start ") >= 2 }); err != nil {
		t.Fatalf("copy-2's command never started: %q\n%s\n%s", s.read(), one.out, two.out)
	}
	if strings.Contains(s.read(), "OVERLAP") {
		t.Errorf("copy-2's command started while what copy-1's command left behind held the flock:\n%s\ncopy-1:\n%s", s.read(), one.out)
	}
	return one
}

// TestCommandRunsInACgroupOfItsOwn: the command, and what it starts, are
// in a cgroup of herald's making, which goes once the command is done.
func TestCommandRunsInACgroupOfItsOwn(t *testing.T) {
	if !needCgroup(t) {
		t.Skip(cgroupVar + " is off: this test is of the cgroup itself")
	}
	t.Parallel()
	out := filepath.Join(t.TempDir(), "cgroup")
	p := start(t, []string{"OUT=" + out}, append(zkFlags(t), "lock", "--lock", uniq(t), "--", "sh", "-c", `sh -c 'grep ^0:: /proc/self/cgroup' > "$OUT"`)...)
	<-p.done
	if p.code != 0 {
		t.Fatalf("herald lock exited %d:\n%s", p.code, p.out)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	rel := strings.TrimSpace(strings.TrimPrefix(string(b), "0::"))
	if !strings.Contains(filepath.Base(rel), "herald-cmd-") {
		t.Fatalf("the command's grandchild is in cgroup %q, not one herald made", rel)
	}
	own, err := ownCgroup()
	if err != nil {
		t.Fatal(err)
	}
	mount, _, _ := cgroup2Mount()
	if _, err := os.Stat(filepath.Join(mount, rel)); !os.IsNotExist(err) {
		t.Errorf("the command's cgroup %s is left after herald lock exited (stat: %v; herald's tests run in %s)", rel, err, own)
	}
}

// TestStaleCommandCgroupsAreSwept: a command cgroup left empty by a
// runner killed with its watchdog goes when another herald makes one, once
// it is older than staleCgroup; a young one, which a runner may be about
// to start its command in, and a populated one stay.
func TestStaleCommandCgroupsAreSwept(t *testing.T) {
	needCgroup(t)
	mine, err := ownCgroup()
	if err != nil {
		t.Fatal(err)
	}
	// A parent of the test's own, which no herald the other tests
	// start sweeps.
	own := filepath.Join(mine, "herald-test-"+newRunID())
	if err := os.Mkdir(own, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(own) })
	mk := func(age time.Duration) string {
		p := filepath.Join(own, cgroupPrefix+"test-"+newRunID())
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { removeCgroup(p) })
		if age > 0 {
			old := time.Now().Add(-age)
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	stale, young, busy := mk(2*staleCgroup), mk(0), mk(2*staleCgroup)
	sleeper := exec.Command("sleep", "60")
	d, err := os.Open(busy)
	if err != nil {
		t.Fatal(err)
	}
	sleeper.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(d.Fd())}
	err = sleeper.Start()
	d.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	sweepCgroups(own)
	for p, want := range map[string]bool{stale: false, young: true, busy: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s (kept: %v): stat says %v", filepath.Base(p), want, err)
		}
	}
}

// freezerV1 is a hierarchy of the cgroup v1 freezer: a task it freezes
// does not die at SIGKILL until thawed, as a process stuck in the kernel
// on a hung mount does not. Where none is mounted (a machine on cgroup v2
// alone) the test mounts one of its own.
func freezerV1(t *testing.T) string {
	t.Helper()
	const mounted = "/sys/fs/cgroup/freezer"
	if _, err := os.Stat(filepath.Join(mounted, "tasks")); err == nil {
		return mounted
	}
	dir := t.TempDir()
	if err := syscall.Mount("herald-test", dir, "cgroup", 0, "freezer"); err != nil {
		if os.Getenv(zktest.RequireEnv) == "1" {
			t.Fatalf("no cgroup v1 freezer to hold a process stuck (none at %s, and mounting one: %v)", mounted, err)
		}
		t.Skipf("no cgroup v1 freezer: none at %s, and mounting one: %v", mounted, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// TestStuckProcessKeepsTheLockUntilItIsGone: a process of the command that
// SIGKILL does not end (stuck in the kernel; here frozen by the cgroup v1
// freezer) holds the command's flock. The runner used to wait 2 s after
// its SIGKILL and release, vouching that its command had stopped, and the
// next owner's command ran beside the stuck process, every run (found by
// an adversarial test): with the command exited and a stray stuck, and,
// silently and for good, with the command's first process stuck. It now
// keeps the lock, says why, and releases once the process is gone.
func TestStuckProcessKeepsTheLockUntilItIsGone(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	needCgroup(t)
	freezer := freezerV1(t)
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
	for _, how := range []string{"stray", "first"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel() // waits on processes, not the CPU
			s := newScene(t, "", false)
			env, read, child := s.env, s.read, s.child
			frz := filepath.Join(freezer, "herald-test-"+newRunID())
			if err := os.Mkdir(frz, 0o755); err != nil {
				t.Fatal(err)
			}
			thaw := func() { _ = os.WriteFile(filepath.Join(frz, "freezer.state"), []byte("THAWED"), 0) }
			t.Cleanup(func() {
				thaw()
				for range 50 {
					if os.Remove(frz) == nil {
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			})
			env = append(env, "FRZ="+frz)
			// The stray: a process of the command, frozen. "first": the
			// command's first process freezes itself; herald is then
			// told to stop.
			freeze := `(echo $$ >> "$MARKS.pids"; sh -c 'echo $PPID > "$FRZ/tasks"; echo FROZEN > "$FRZ/freezer.state"'; while :; do sleep 0.05; done) & sleep 0.5; touch "$DIR/frozen"`
			if how == "first" {
				freeze = `echo $$ > "$FRZ/tasks"; touch "$DIR/frozen"; echo FROZEN > "$FRZ/freezer.state"; sleep 60`
			}
			dir := s.dir
			first := start(t, env, append(zk, "lock", "--lock", uniq(t), "--id", "copy-1", "--grace", "1s", "--", "sh", "-c", child+freeze)...)
			g := first.cmd.Args[len(zk)+3]
			if err := waitFor(20*time.Second, func() bool { _, err := os.Stat(filepath.Join(dir, "frozen")); return err == nil }); err != nil {
				t.Fatalf("copy-1's command never froze: %q\n%s", read(), first.out)
			}
			second := start(t, env, append(zk, "lock", "--lock", g, "--id", "copy-2", "--", "sh", "-c", child+`sleep 60`)...)
			waitQueued(t, zk, g, 2, "copy-2 never queued")
			if how == "first" {
				_ = first.cmd.Process.Signal(syscall.SIGTERM)
			}
			if err := waitFor(20*time.Second, func() bool { return strings.Contains(first.out.String(), "outlived their SIGKILL") }); err != nil {
				t.Fatalf("copy-1 never said that something of its command is stuck:\n%s", first.out)
			}
			time.Sleep(time.Second)
			if strings.Count(read(), "start ") != 1 {
				t.Fatalf("copy-2's command started beside a stuck process of copy-1's command:\n%s\ncopy-1:\n%s", read(), first.out)
			}
			thaw()
			if err := waitFor(30*time.Second, func() bool { return strings.Count(read(), "start ") == 2 }); err != nil {
				t.Fatalf("copy-2's command never started once the stuck process was thawed (and died): %q\ncopy-1:\n%s\ncopy-2:\n%s", read(), first.out, second.out)
			}
			if strings.Contains(read(), "OVERLAP") {
				t.Errorf("copy-2's command started while a process of copy-1's command held the flock:\n%s\ncopy-1:\n%s", read(), first.out)
			}
		})
	}
}

// TestCgroupOutOfSightIsNotTakenForEmpty: the command (root, in a mount
// namespace of its runner's: nothing else sees it) unmounts the cgroup2
// hierarchy, or mounts a tmpfs over its own cgroup; its cgroup still
// holds it, but herald's path to it is gone. herald took "no such file"
// for a cgroup removed, and so empty: the releaser of a runner killed
// with kill -9 released at once while a helper the command started at
// SIGTERM held its flock, every run (both found by adversarial tests). A
// cgroup out of sight is now unknown, and the process group, the strays
// and HERALD_RUN_ID tell instead.
func TestCgroupOutOfSightIsNotTakenForEmpty(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	if !needCgroup(t) {
		t.Skip(cgroupVar + " is off: this test is of the cgroup itself")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("unshare (util-linux) is needed: %v", err)
	}
	mount, _, err := cgroup2Mount()
	if err != nil {
		t.Fatal(err)
	}
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
	for how, hide := range map[string]string{
		"unmounted": `umount -l "$CGMOUNT"`,
		"covered":   `mount -t tmpfs none "$CGMOUNT$(sed -n 's/^0:://p' /proc/self/cgroup)"`,
	} {
		t.Run(how, func(t *testing.T) {
			t.Parallel() // waits on processes, not the CPU
			s := newScene(t, `echo $$ >> "$MARKS.pids"; while :; do sleep 0.1; done`, false)
			s.env = append(s.env, "CGMOUNT="+mount)
			s.script(t, "onterm.sh", `sh "$DIR/leave.sh" & sleep 0.3; `+hide+` && touch "$DIR/hidden"; wait`)
			s.script(t, "leave.sh", `trap 'setsid sh "$DIR/helper.sh" & exit 0' TERM; while :; do sleep 0.1; done`+"\n")
			first := handOver(t, zk, s, "kill-9", "2s", func(args []string) *proc {
				p := startBin(t, unshare, s.env, append([]string{"-m", "--propagation", "private", heraldBin}, args...)...)
				if err := waitFor(20*time.Second, func() bool { _, err := os.Stat(filepath.Join(s.dir, "hidden")); return err == nil }); err != nil {
					t.Fatalf("copy-1's command never hid its cgroup: %q\n%s", s.read(), p.out)
				}
				return p // unshare execs herald: its process is the runner
			})
			inCgroupSaid(t, true, first.out.String())
		})
	}
}

// TestHelperMovedOutOfTheCgroupIsStillStopped: a helper the command starts
// at its SIGTERM moves itself out of the command's cgroup into herald's
// (as pam_systemd moves su -l into a session scope, or systemd-run --scope
// a process) and out of its session. The empty cgroup alone decided once
// the runner was dead: its releaser released at once and the next
// owner's command ran beside the helper (found by review). An empty
// cgroup now sends herald on to the process group, the strays and
// HERALD_RUN_ID.
func TestHelperMovedOutOfTheCgroupIsStillStopped(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	if !needCgroup(t) {
		t.Skip(cgroupVar + " is off: this test is of the cgroup itself")
	}
	mount, _, err := cgroup2Mount()
	if err != nil {
		t.Fatal(err)
	}
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
	for _, how := range []string{"deleted", "kill-9"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel() // waits on processes, not the CPU
			s := newScene(t, `rel=$(sed -n 's/^0:://p' /proc/self/cgroup); echo $$ > "$CGMOUNT$(dirname "$rel")/cgroup.procs"; echo $$ >> "$MARKS.pids"; touch "$DIR/moved"; while :; do sleep 0.1; done`, true)
			s.env = append(s.env, "CGMOUNT="+mount)
			first := handOver(t, zk, s, how, "10s", func(args []string) *proc { return start(t, s.env, args...) })
			inCgroupSaid(t, true, first.out.String())
			if _, err := os.Stat(filepath.Join(s.dir, "moved")); err != nil {
				t.Fatalf("the helper never moved out of the cgroup (%v):\n%s", err, first.out)
			}
		})
	}
}

// TestOnlyACommandsCgroupIsKilledOrRemoved: the releaser takes the cgroup
// as an argument; a path that is not a command's cgroup (wrong name, not on
// cgroup2) is refused, and nothing there is written or removed.
func TestOnlyACommandsCgroupIsKilledOrRemoved(t *testing.T) {
	notCgroup := filepath.Join(t.TempDir(), cgroupPrefix+"x")
	if err := os.MkdirAll(filepath.Join(notCgroup, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", "relative/" + cgroupPrefix + "x", t.TempDir(), notCgroup} {
		if err := validCgroup(p); err == nil {
			t.Errorf("validCgroup(%q) = nil, want an error", p)
		}
		if err := cgroupKill(p); err == nil {
			t.Errorf("cgroupKill(%q) = nil, want an error", p)
		}
	}
	removeCgroup(notCgroup)
	if _, err := os.Stat(filepath.Join(notCgroup, "empty")); err != nil {
		t.Errorf("removeCgroup removed directories outside cgroup2: %v", err)
	}
	if _, err := os.Stat(filepath.Join(notCgroup, "cgroup.kill")); err == nil {
		t.Error("cgroupKill made a file outside cgroup2")
	}
	if on := needCgroup(t); on {
		own, err := ownCgroup()
		if err != nil {
			t.Fatal(err)
		}
		if err := validCgroup(filepath.Join(own, cgroupPrefix+newRunID())); err != nil {
			t.Errorf("a command's cgroup, made or gone, is refused: %v", err)
		}
	}
}

// TestCommandRunsWithoutACgroupWhereNoneCanBeMade: herald started where
// it cannot make a cgroup (no cgroup may be made below its own) or cannot
// start the command in one it made (its own is threaded: clone3 fails,
// and herald starts the command again without one) runs the command all
// the same, says why it has no cgroup, and leaves none behind.
func TestCommandRunsWithoutACgroupWhereNoneCanBeMade(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	if !needCgroup(t) {
		t.Skip(cgroupVar + " is off: this test is of the cgroup itself")
	}
	mount, _, err := cgroup2Mount()
	if err != nil {
		t.Fatal(err)
	}
	for how, want := range map[string]string{"no-descendants": "cannot make a cgroup", "threaded": "cannot hold processes"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			cg := testCgroup(t, filepath.Join(mount, "herald-test-"+newRunID()))
			where := cg
			if how == "threaded" {
				where = filepath.Join(cg, "t")
				if err := os.Mkdir(where, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(where, "cgroup.type"), []byte("threaded"), 0); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(filepath.Join(cg, "cgroup.max.descendants"), []byte("0"), 0); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "ran")
			p := lockIn(t, where, out, `echo ran > "$OUT"`)
			if b, err := os.ReadFile(out); err != nil || strings.TrimSpace(string(b)) != "ran" {
				t.Errorf("the command did not run (%q, %v):\n%s", b, err, p.out)
			}
			if s := p.out.String(); !strings.Contains(s, `cgroup="none: `) || !strings.Contains(s, want) {
				t.Errorf("the log does not say there is no cgroup because it %s:\n%s", want, s)
			}
			entries, _ := os.ReadDir(where)
			for _, e := range entries {
				if e.IsDir() && strings.HasPrefix(e.Name(), cgroupPrefix) {
					t.Errorf("%s left behind in %s", e.Name(), where)
				}
			}
		})
	}
}

// testCgroup makes the cgroup at path for a test, and kills what is in
// it and removes it, with what herald made below it, when the test ends.
func testCgroup(t *testing.T, path string) string {
	t.Helper()
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 50 {
			_ = cgroupKillAny(path)
			if removeCgroupTree(path) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return path
}

// lockIn runs `herald lock` with command (given $OUT, out) in the cgroup
// where, and fails the test unless it exits 0.
func lockIn(t *testing.T, where, out, command string) *proc {
	t.Helper()
	args := append(zkFlags(t), "lock", "--lock", uniq(t), "--", "sh", "-c", command)
	p := startBin(t, "/bin/sh", []string{"WHERE=" + where, "OUT=" + out},
		append([]string{"-c", `echo $$ > "$WHERE/cgroup.procs" || exit 99; exec "$HERALD_BIN" "$@"`, "sh"}, args...)...)
	<-p.done
	if p.code != 0 {
		t.Fatalf("herald lock in cgroup %s exited %d:\n%s", where, p.code, p.out)
	}
	return p
}

// cgroupKillAny kills what is in the cgroup at path, whatever its name.
func cgroupKillAny(path string) error {
	return os.WriteFile(filepath.Join(path, "cgroup.kill"), []byte("1"), 0)
}

// removeCgroupTree removes the cgroup at path and those below it.
func removeCgroupTree(path string) error {
	var dirs []string
	_ = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Remove(dirs[i]); err != nil {
			return err
		}
	}
	return nil
}

// TestTracedZombieDoesNotHoldTheHandover: a process of the command is
// traced by a tracer outside herald that does not collect it (a debugger
// that is stopped): killed, it stays a zombie, holding nothing, its flock
// gone with it. herald counted the zombie in the process group and, since
// it waits for a stuck process, waited for good (found by an adversarial
// test); it now hands over.
func TestTracedZombieDoesNotHoldTheHandover(t *testing.T) {
	t.Parallel() // waits on processes, not the CPU
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
	s := newScene(t, "", false)
	g := uniq(t)
	first := start(t, s.env, append(zk, "lock", "--lock", g, "--id", "copy-1", "--grace", "1s", "--", "sh", "-c", s.child+`sleep 1000 & echo $! > "$DIR/traced"; wait`)...)
	var pid int
	if err := waitFor(20*time.Second, func() bool {
		b, err := os.ReadFile(filepath.Join(s.dir, "traced"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 1
	}); err != nil {
		t.Fatalf("copy-1's command never started its sleeper: %s", first.out)
	}
	// The tracer: an OS thread of the test's own, locked, which seizes
	// the sleeper and collects it only when told. The thread goes back
	// to Go once it traces nothing; one still tracing ends with the
	// goroutine, and its tracee's hold with it. An ended thread takes
	// with it, by their Pdeathsig, the processes started from it
	// (zkserver starts its servers from a thread that never ends).
	collect, seized := make(chan struct{}), make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		const ptraceSeize = 0x4206
		if _, _, e := syscall.RawSyscall6(syscall.SYS_PTRACE, ptraceSeize, uintptr(pid), 0, 0, 0, 0); e != 0 {
			runtime.UnlockOSThread()
			seized <- e
			return
		}
		seized <- nil
		<-collect
		for range 100 {
			var ws syscall.WaitStatus
			if p, _ := syscall.Wait4(pid, &ws, syscall.WALL|syscall.WNOHANG, nil); p == pid && (ws.Exited() || ws.Signaled()) {
				runtime.UnlockOSThread()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	if err := <-seized; err != nil {
		t.Fatalf("PTRACE_SEIZE of the sleeper: %v", err)
	}
	var once sync.Once
	release := func() { once.Do(func() { close(collect) }) }
	t.Cleanup(release)
	second := start(t, s.env, append(zk, "lock", "--lock", g, "--id", "copy-2", "--", "sh", "-c", s.child+`sleep 60`)...)
	waitQueued(t, zk, g, 2, "copy-2 never queued")
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := waitFor(15*time.Second, func() bool { return strings.Count(s.read(), "start ") == 2 })
	zombie := false
	if p, ok := readProc(pid); ok {
		zombie = p.zombie
	}
	release()
	if err != nil {
		t.Fatalf("copy-1 did not hand over while all that was left of its command was a zombie (still one: %v):\ncopy-1:\n%s\ncopy-2:\n%s", zombie, first.out, second.out)
	}
	if strings.Contains(s.read(), "OVERLAP") {
		t.Errorf("copy-2's command started while a process of copy-1's held the flock:\n%s\ncopy-1:\n%s", s.read(), first.out)
	}
}

// TestCommandCgroupBelowAnOddlyNamedOne: herald in a cgroup whose name
// holds a space, or ends in " (deleted)" (which herald cut off, and so
// looked for a cgroup that was not there, or a sibling's; found by an
// adversarial test), makes its command's cgroup below its own.
func TestCommandCgroupBelowAnOddlyNamedOne(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	if !needCgroup(t) {
		t.Skip(cgroupVar + " is off: this test is of the cgroup itself")
	}
	mount, _, err := cgroup2Mount()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"herald test " + newRunID(), "herald-test-" + newRunID() + " (deleted)"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			own := testCgroup(t, filepath.Join(mount, name))
			out := filepath.Join(t.TempDir(), "cgroup")
			p := lockIn(t, own, out, `grep ^0:: /proc/self/cgroup > "$OUT"`)
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			rel := strings.TrimSpace(strings.TrimPrefix(string(b), "0::"))
			if filepath.Dir(filepath.Join(mount, rel)) != own || !strings.HasPrefix(filepath.Base(rel), cgroupPrefix) {
				t.Errorf("the command ran in cgroup %q, not in one of its own below %q:\n%s", rel, own, p.out)
			}
		})
	}
}
