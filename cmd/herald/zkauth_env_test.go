package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestZKAuthEnvIsTidied: HERALD_ZK_AUTH with a line break or blanks around
// it (a Kubernetes secret given as a variable) logs in as user:password
// without them, as --zk-auth-file does: the nodes herald creates belong
// to alice:secret, and a herald the command starts (checkpoint put)
// logs in as the same identity. The checkpoint alone is not readable
// without the credentials. A line break inside the value is a usage
// error.
func TestZKAuthEnvIsTidied(t *testing.T) {
	zkFl := zkFlags(t)
	openTestRoot(t)
	conn := rawZK(t)
	// ZooKeeper shows a digest entry's hash only to an identity the node
	// lets administer it (others read "x"): alice:secret, once the fix
	// holds.
	if err := conn.AddAuth("digest", []byte("alice:secret")); err != nil {
		t.Fatal(err)
	}
	want := append(zk.DigestACL(zk.PermAll, "alice", "secret"), zk.WorldACL(zk.PermRead)...)
	for _, v := range []string{"alice:secret\n", "  alice:secret \r\n"} {
		g := uniq(t)
		out, stderr, code := heraldRun(t, []string{"HERALD_ZK_AUTH=" + v},
			append(zkFl, "run", "--election", g, "--", "sh", "-c", `"$HERALD_BIN" checkpoint put step=1 && echo put-ok`)...)
		if code != 0 || !strings.Contains(out, "put-ok") {
			t.Fatalf("HERALD_ZK_AUTH=%q: exit %d:\n%s%s", v, code, out, stderr)
		}
		// The checkpoint, the leaders' own state, is theirs to read.
		for p, want := range map[string][]zk.ACL{g: want, g + "/" + elect.CheckpointNode: want[:1]} {
			got, _, err := conn.GetACL(p)
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("HERALD_ZK_AUTH=%q: ACL of %s is %s, %v; want %s", v, p, elect.FormatACL(got), err, elect.FormatACL(want))
			}
		}
		if out, stderr, code := heraldRun(t, nil, append(zkFl, "checkpoint", "get", "--election", g)...); code != exitFailure || !strings.Contains(stderr, "refused this identity") {
			t.Errorf("checkpoint get without the credentials: exit %d, want %d, refused:\n%s%s", code, exitFailure, out, stderr)
		}
		if out, stderr, code := heraldRun(t, []string{"HERALD_ZK_AUTH=" + v}, append(zkFl, "checkpoint", "get", "--election", g)...); code != 0 || !strings.Contains(out, "step=1") {
			t.Errorf("checkpoint get with them: exit %d, want step=1:\n%s%s", code, out, stderr)
		}
	}
	g := uniq(t)
	_, stderr, code := heraldRun(t, []string{"HERALD_ZK_AUTH=alice:secret\nbob:other"}, append(zkFl, "run", "--election", g, "--", "true")...)
	if code != exitUsage || !strings.Contains(stderr, "HERALD_ZK_AUTH holds more than one line") {
		t.Errorf("HERALD_ZK_AUTH with two lines: exit %d, want %d saying it holds more than one line:\n%s", code, exitUsage, stderr)
	}
}
