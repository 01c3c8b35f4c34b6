package main

import (
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestNewCopyAfterADeleteallWaitsForTheFrozenOwner: the owner of a group
// is frozen (SIGSTOP) while its command, which ignores SIGTERM, runs;
// someone deletes the whole group (a deleteall); then a new copy starts
// on the same path. Its node is the first of the group made anew, with
// nobody before it in the group, and it started its command at once,
// beside the frozen owner's, until the watchdog killed that one: 2.7 s
// with 6 s sessions (found by an adversarial test). The owner's run note,
// kept outside the group, now tells the new copy to wait until that
// command is surely stopped.
func TestNewCopyAfterADeleteallWaitsForTheFrozenOwner(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	for _, recipe := range []string{"run", "lock"} {
		t.Run(recipe, func(t *testing.T) {
			t.Parallel() // waits on sessions and processes, not the CPU
			_, second, read := frozenOwnerAndAGroupMadeAnew(t, recipe)
			if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
				t.Fatalf("copy-2's command never started: %q\n%s", read(), second.out)
			}
			if strings.Contains(read(), "OVERLAP") {
				t.Errorf("copy-2 started its command in the group made anew while frozen copy-1's still ran:\n%s\n%s", read(), second.out)
			}
			second.waitOutput(t, "noted a command for the group that may still run", time.Second)
		})
	}
}

// TestNewCopyAfterADeleteallStartsOnceTheKilledOwnersCommandIsGone: as
// above, but the frozen owner's runner is then killed (kill -9) while the
// new copy waits for its run note. Its watchdog stops the command and its
// releaser deletes the note: the new copy starts then, saying why, where
// it waited for the dead session to expire (6 s). So too when the kill
// comes after the watchdog fired for the freeze ("late"): the watchdog
// then started no releaser (found by review).
func TestNewCopyAfterADeleteallStartsOnceTheKilledOwnersCommandIsGone(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	for _, recipe := range []string{"run", "lock", "lock late"} {
		t.Run(recipe, func(t *testing.T) {
			recipe, late := strings.CutSuffix(recipe, " late")
			t.Parallel() // waits on sessions and processes, not the CPU
			first, second, read := frozenOwnerAndAGroupMadeAnew(t, recipe)
			second.waitOutput(t, "noted a command for the group that may still run", 10*time.Second)
			if late {
				first.waitOutput(t, "herald watchdog: herald gave no sign of life", 10*time.Second)
			}
			if err := first.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
				t.Fatalf("copy-2's command never started: %q\n%s", read(), second.out)
			}
			// The watchdog gives the command that traps SIGTERM until 3.5 s
			// after the frozen runner's last heartbeat, which was at the
			// freeze, just before copy-2 came: the releaser reports up to
			// about 3.5 s after the kill, the dead session expires 6 s after
			// the freeze, and copy-2's own bound ends 5.5 s after it noted
			// the wait. (2 s held only while copy-2 took 1.5 s to come up.)
			if took := time.Since(killed); took > 4500*time.Millisecond {
				t.Errorf("copy-2 started %v after copy-1's runner was killed: it waited for the dead session (6 s) or its own bound, not for the releaser", took.Round(time.Millisecond))
			}
			if strings.Contains(read(), "OVERLAP") {
				t.Errorf("copy-2 started beside copy-1's command:\n%s", read())
			}
			second.waitOutput(t, "its run note went", time.Second)
		})
	}
}

// frozenOwnerAndAGroupMadeAnew starts copy-1 of recipe (6 s sessions, a
// command that ignores SIGTERM and marks its start and any overlap in
// what read reads), freezes its runner once the command runs, deletes the
// whole group and starts copy-2, which makes the group again.
func frozenOwnerAndAGroupMadeAnew(t *testing.T, recipe string) (first, second *proc, read func() string) {
	t.Helper()
	addr := zktest.Shared(t).ConnectString()
	g := uniq(t)
	child, env, read := overlapMarks(t)
	run := markedCopies(t, recipe, g, env, child)
	first = run("copy-1", addr)
	if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") == 1 }); err != nil {
		t.Fatalf("no command started: %q\n%s", read(), first.out)
	}
	pid := first.cmd.Process.Pid
	if err := signalPID(pid, sigStop); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = signalPID(pid, sigCont) })
	deleteAll(t, rawZK(t), g)
	return first, run("copy-2", addr), read
}
