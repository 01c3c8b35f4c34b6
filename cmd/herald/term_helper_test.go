//go:build unix

package main

import (
	"os"
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
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
	for _, how := range []string{"deleted-1", "deleted-2", "deleted-3", "kill-9"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel() // waits on processes, not the CPU
			dir := t.TempDir()
			marks := filepath.Join(dir, "marks")
			script := func(name, body string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			script("helper.sh", `echo $$ >> "$MARKS.pids"; while :; do sleep 0.1; done`+"\n")
			script("onterm.sh", `trap 'setsid sh "$DIR/helper.sh" & exit 0' TERM; while :; do sleep 0.1; done`+"\n")
			t.Cleanup(func() {
				b, _ := os.ReadFile(marks + ".pids")
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			})
			read := func() string { b, _ := os.ReadFile(marks); return string(b) }
			env := []string{"MARKS=" + marks, "DIR=" + dir}
			child := `exec 9>>"$MARKS.lock"; flock -n 9 || echo "OVERLAP $HERALD_ID" >> "$MARKS"; echo "start $HERALD_ID" >> "$MARKS"; `
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
