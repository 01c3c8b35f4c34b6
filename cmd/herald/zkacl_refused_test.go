package main

import (
	"strings"
	"testing"
)

// TestZKACLRefusedByZooKeeperIsExplained: an --zk-acl whose ip entry is no
// address (a host name) is a usage error before herald connects; one that
// only the server can judge (a sasl entry on a server without SASL) fails
// at the first create, and herald then names --zk-acl and what the server
// lacks. Both used to end with ZooKeeper's "zk: invalid ACL specified"
// alone, naming neither the entry nor the flag.
func TestZKACLRefusedByZooKeeperIsExplained(t *testing.T) {
	zkFl := zkFlags(t)
	openTestRoot(t)
	conn := rawZK(t)
	for _, c := range []struct {
		acl, want string
		code      int
	}{
		{"ip:zk-host:cdrwa,world:anyone:r", `"zk-host" is not an IP address`, exitUsage},
		{"ip:10.0.0.1/40:cdrwa,world:anyone:r", "prefix length", exitUsage},
		{"sasl:bob:cdrwa,world:anyone:cdrwa", "ZooKeeper refused the ACL herald creates nodes with (--zk-acl", 1},
	} {
		parent := uniq(t)
		args := append(append([]string{}, zkFl...), "--zk-acl", c.acl, "lock", "--lock", parent+"/x", "--", "echo", "ran")
		out, stderr, code := heraldRun(t, nil, args...)
		if code != c.code || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "--zk-acl") || strings.Contains(out, "ran") {
			t.Errorf("lock --zk-acl %s: exit %d, want %d saying %q and nothing run:\n%s%s", c.acl, code, c.code, c.want, out, stderr)
		}
		if ok, _, err := conn.Exists(parent); err != nil || ok {
			t.Errorf("lock --zk-acl %s left %s behind (exists %v, %v)", c.acl, parent, ok, err)
		}
	}
}
