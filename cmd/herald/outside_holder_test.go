package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

// TestLockRefusesAGroupHeldOutsideItsQueue: herald lock on a path where
// another client holds its lock as one ephemeral node without a sequence
// (create -e PATH/lock) ran its command beside that holder; it now exits 1
// saying why, runs nothing, and leaves no node behind.
func TestLockRefusesAGroupHeldOutsideItsQueue(t *testing.T) {
	zkFl := zkFlags(t)
	g := uniq(t)
	c := rawZK(t)
	mknode(t, c, g+"/lock", []byte("another client"), zk.FlagEphemeral)
	ran := filepath.Join(t.TempDir(), "ran")
	_, stderr, code := heraldRun(t, nil, append(zkFl, "lock", "--lock", g, "--timeout", "10s", "--", "touch", ran)...)
	if code != 1 || !strings.Contains(stderr, "without a sequence") {
		t.Fatalf("lock beside an ephemeral lock node: exit %d; want 1 saying the node holds outside the queue; stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatalf("the command ran beside another client's lock node")
	}
	if ch, _, err := c.Children(g); err != nil || !slices.Equal(ch, []string{"lock"}) {
		t.Fatalf("children of %s after the refusal: %v, %v; want the other client's node alone", g, ch, err)
	}
}
