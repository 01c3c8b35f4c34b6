package main

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/natsserver"
)

// TestWhoSaysWhyNobodyHoldsALeaderNode: a persistent node put at a single
// leader's path while nobody held it (an operator's, a restored copy) is
// not taken for a leader's, and the bridge says why at once: its note
// reached readers only with the next snapshot (no owner before, none
// after: no change), and who --nats did not print the note of a group
// without an owner at all.
func TestWhoSaysWhyNobodyHoldsALeaderNode(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	flags := zkFlags(t)
	url := natsserver.Start(t).URL()
	root := uniq(t)
	c := rawZK(t)
	mkpath(t, c, root)
	leader := root + "/leader"
	start(t, nil, append([]string{"bridge", "--leader", leader, "--nats", url, "--heartbeat", "200ms"}, flags...)...)
	who := func(want string) string {
		t.Helper()
		var out string
		if err := waitFor(20*time.Second, func() bool {
			out, _, _ = heraldRun(t, nil, "who", leader, "--nats", url)
			return strings.Contains(out, want)
		}); err != nil {
			t.Fatalf("who %s --nats never said %q:\n%s", leader, want, out)
		}
		return out
	}
	if out := who("fresh"); !strings.Contains(out, "no owner") || strings.Contains(out, "note:") {
		t.Fatalf("who of an empty leader path: want no owner, without a note:\n%s", out)
	}
	if _, err := c.Create(leader, []byte("host1:8080"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	out := who("note: " + leader + " is not taken for a leader's node")
	if !strings.Contains(out, "no owner") || !strings.Contains(out, "persistent") {
		t.Fatalf("who after a persistent node appeared at %s: want no owner, saying why:\n%s", leader, out)
	}
	if err := c.Delete(leader, -1); err != nil {
		t.Fatal(err)
	}
	// Gone again: the note goes with it.
	if err := waitFor(20*time.Second, func() bool {
		out, _, _ = heraldRun(t, nil, "who", leader, "--nats", url)
		return strings.Contains(out, "no owner") && strings.Contains(out, "fresh") && !strings.Contains(out, "note:")
	}); err != nil {
		t.Fatalf("who after the node went still notes it:\n%s", out)
	}
}
