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
