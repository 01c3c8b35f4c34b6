package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

// TestZKACLWithoutOwnAccessIsRefused: an --zk-acl under which herald's own
// session could not create and delete its nodes (read only, or a digest
// entry holding the password instead of its hash) is a usage error before
// anything is created: no parent is left behind for later runs to trip
// on, and a run with a usable ACL then takes the same group. The error
// does not repeat the password.
func TestZKACLWithoutOwnAccessIsRefused(t *testing.T) {
	zkFl := zkFlags(t)
	openTestRoot(t)
	conn := rawZK(t)
	auth := filepath.Join(t.TempDir(), "auth")
	if err := os.WriteFile(auth, []byte("alice:hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	parent := uniq(t)
	g := parent + "/jobs/x"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--zk-acl", "world:anyone:r"}, "does not let this session create, write and delete"},
		{[]string{"--zk-auth-file", auth, "--zk-acl", "world:anyone:r"}, "does not let this session create, write and delete"},
		{[]string{"--zk-auth-file", auth, "--zk-acl", "digest:alice:hunter2:cdrwa,world:anyone:r"}, "looks like a plaintext password"},
		{[]string{"--zk-auth-file", auth, "--zk-acl", "digest:alice:" + zk.DigestACL(zk.PermAll, "alice", "other")[0].ID[len("alice:"):] + ":cdrwa,world:anyone:r"}, "does not let this session"},
	} {
		args := append(append(append([]string{}, zkFl...), c.args...), "run", "--election", g, "--", "echo", "ran")
		out, stderr, code := heraldRun(t, nil, args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "--zk-acl") || strings.Contains(out, "ran") {
			t.Errorf("run %v: exit %d, want %d saying %q and nothing run:\n%s%s", c.args, code, exitUsage, c.want, out, stderr)
		}
		if strings.Contains(stderr, "hunter2") {
			t.Errorf("run %v: the error repeats the password:\n%s", c.args, stderr)
		}
		if ok, _, err := conn.Exists(parent); err != nil || ok {
			t.Fatalf("run %v left %s behind (exists %v, %v)", c.args, parent, ok, err)
		}
	}
	hash := zk.DigestACL(zk.PermAll, "alice", "hunter2")[0].ID
	out, stderr, code := heraldRun(t, nil, append(zkFl, "--zk-auth-file", auth, "--zk-acl", "digest:"+hash+":cdrwa,world:anyone:r", "run", "--election", g, "--", "echo", "ran")...)
	if code != 0 || !strings.Contains(out, "ran") {
		t.Fatalf("run with the digest entry of its own credentials: exit %d:\n%s%s", code, out, stderr)
	}
}

// TestZKACLCheckedOnlyWhereNodesAreCreated: HERALD_ZK_ACL exported on a
// host for its writers (run, lock, checkpoint put, bench, bridge --ha)
// does not stop the commands that create nothing. who and history --audit
// (which never connects to ZooKeeper) used to be refused with exit 2 by an
// ACL they never use; the writers still are.
func TestZKACLCheckedOnlyWhereNodesAreCreated(t *testing.T) {
	zkFl := zkFlags(t)
	openTestRoot(t)
	g := uniq(t)
	audit := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(audit, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	other := zk.DigestACL(zk.PermAll, "alice", "not-this-session")[0].ID
	for _, acl := range []string{"digest:" + other + ":cdrwa,world:anyone:r", "world:anyone:r", "not an acl"} {
		env := []string{"HERALD_ZK_ACL=" + acl}
		for _, args := range [][]string{
			{"who", g},
			{"history", g, "--audit", audit},
			{"checkpoint", "get", "--election", g},
			{"bridge", "shard-of", "--shards", "2", g},
		} {
			out, stderr, code := heraldRun(t, env, append(append([]string{}, zkFl...), args...)...)
			if code == exitUsage || strings.Contains(stderr, "zk-acl") {
				t.Errorf("HERALD_ZK_ACL=%s herald %v, which creates nothing: exit %d:\n%s%s", acl, args, code, out, stderr)
			}
		}
		for _, args := range [][]string{
			{"run", "--election", g, "--", "echo", "ran"},
			{"lock", "--lock", g, "--", "echo", "ran"},
			{"checkpoint", "put", "--election", g, "x"},
			{"bench"},
			{"bridge", "--watch", g, "--ha", g + "-ha", "--nats", "nats://127.0.0.1:1"},
		} {
			out, stderr, code := heraldRun(t, env, append(append([]string{}, zkFl...), args...)...)
			if code != exitUsage || !strings.Contains(stderr, "--zk-acl") || strings.Contains(out, "ran") {
				t.Errorf("HERALD_ZK_ACL=%s herald %v: exit %d, want %d naming --zk-acl:\n%s%s", acl, args, code, exitUsage, out, stderr)
			}
		}
	}
}
