package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// stampScript ignores SIGTERM and writes the time into $ALIVE every 20 ms
// until it is killed.
const stampScript = `trap '' TERM; echo holding; while :; do date +%s%N > "$ALIVE.tmp" && mv "$ALIVE.tmp" "$ALIVE"; sleep 0.02; done`

// A runner told to stop (SIGTERM, a long --grace) whose node is deleted by
// hand while its command, which ignores SIGTERM, is still stopping, in a
// group where a client of the classic recipe waits: that client owns as
// soon as it hears the node went, waiting for no record that the command
// stopped. So the command must be killed then, as it is when the deletion
// comes while it runs. Before, the stop's plan had fixed the kill at a
// sixth of the timeout after the SIGTERM, and the command ran on beside
// the next owner for most of it (1.9 s with 12 s sessions). Without that
// client, the command keeps its sixth: a herald runner next waits for it.
func TestForeignNextDeletionWhileStoppingKillsAtOnce(t *testing.T) {
	for _, recipe := range []string{"lock", "run"} {
		for _, foreign := range []bool{true, false} {
			t.Run(recipe+"-foreign-"+strconv.FormatBool(foreign), func(t *testing.T) {
				deletedWhileStopping(t, recipe, foreign)
			})
		}
	}
}

func deletedWhileStopping(t *testing.T, recipe string, foreign bool) {
	const timeout = 12 * time.Second
	g := uniq(t)
	c := rawZK(t)
	alive := filepath.Join(t.TempDir(), "alive")
	flag := map[string]string{"run": "--election", "lock": "--lock"}[recipe]
	args := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", timeout.String(), "--connect-timeout", "10s",
		recipe, flag, g, "--id", "holder", "--grace", "60s", "--", "sh", "-c", stampScript}
	h := start(t, []string{"ALIVE=" + alive}, args...)
	h.waitOutput(t, "holding", 20*time.Second)
	own := nodeOf(t, c, g, "holder")
	if foreign {
		// A client of the classic recipe queues behind the owner; the
		// owner's guard lists the group on the join, a round trip on.
		if _, err := c.Create(g+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	h.waitOutput(t, "signal received; stopping the child", 10*time.Second)
	deleted := time.Now()
	if err := c.Delete(g+"/"+own, -1); err != nil {
		t.Fatal(err)
	}
	h.wait(t, 30*time.Second)
	over := lastStamp(t, alive).Sub(deleted)
	t.Logf("the command's last stamp %v after the deletion", over.Round(time.Millisecond))
	switch {
	case foreign && over > timeout/12:
		t.Errorf("the command ran on %v after its node was deleted, beside the classic client that owned then (at most %v, the time to hear of it, expected)\n%s",
			over.Round(time.Millisecond), timeout/12, h.out)
	case !foreign && over < timeout/12:
		t.Errorf("the command, in a group of herald's alone, was killed %v after its node was deleted, not given the sixth of the timeout from its SIGTERM\n%s",
			over.Round(time.Millisecond), h.out)
	}
}

// lastStamp reads the time the stamp file holds.
func lastStamp(t *testing.T, f string) time.Time {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("stamp %q: %v", b, err)
	}
	return time.Unix(0, ns)
}
