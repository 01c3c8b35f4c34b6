package main

import (
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestWatchdogOutlivesASignalToTheGroupAtTheStart: the command signals
// its own process group (SIGTERM) as soon as it starts. The watchdog is in
// that group, and used to be let loose before it had set itself to
// ignore such signals, so the command's SIGTERM, or the runner's own when
// ownership was lost within moments of the start, killed it. A runner
// frozen in that moment then left its command, which ignored SIGTERM,
// running beside the next owner's (once in CI, in
// TestRunnerFrozenWhileStoppingItsCommand: lost 113 ms after the start).
// The command is now held until the watchdog says it watches.
func TestWatchdogOutlivesASignalToTheGroupAtTheStart(t *testing.T) {
	t.Parallel() // its subtests wait on sessions and processes, not the CPU
	for _, recipe := range []string{"run", "lock"} {
		t.Run(recipe, func(t *testing.T) {
			t.Parallel() // waits on sessions and processes, not the CPU
			g := uniq(t)
			flag := map[string]string{"run": "--election", "lock": "--lock"}[recipe]
			p := start(t, nil, "--zk", zktest.Shared(t).ConnectString(), recipe, flag, g, "--id", "signaller", "--",
				"sh", "-c", `trap "" TERM; kill -TERM 0; echo signalled; exec sleep 60`)
			p.waitOutput(t, "signalled", 20*time.Second)
			time.Sleep(500 * time.Millisecond) // the runner hears a watchdog's death at once
			if out := p.out.String(); strings.Contains(out, "watchdog died") {
				t.Fatalf("the command's SIGTERM to its group killed the watchdog:\n%s", out)
			}
			dog := watchdogPID(t, p)
			if st, ok := readProc(dog); !ok || st.zombie {
				t.Fatalf("the watchdog %d is gone:\n%s", dog, p.out)
			}
		})
	}
}
