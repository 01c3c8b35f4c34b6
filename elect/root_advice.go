package elect

import (
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
)

// closingAdvice is what to run to let only herald's identities (those
// acl, the ACL of a session's nodes, lets write) create at n, whose ACL
// got lets anyone create. The entries already on n stay, everyone's cut
// to READ: a setAcl naming only this copy's identities, pasted as
// printed, locked out every other identity that shares the node (the
// bridges' beside the runners', under /herald). Where got hides a digest
// hash (user:x, to a reader that may not administer n), no setAcl can
// keep that identity, so the entries to add are named instead.
func closingAdvice(n string, got, acl []zk.ACL) string {
	want := rootACL(acl)
	if slices.ContainsFunc(got, hiddenDigest) {
		own := slices.DeleteFunc(slices.Clone(want), func(a zk.ACL) bool { return a.Scheme == "world" })
		return fmt.Sprintf("add %s to the ACL that getAcl %s shows its maker or the super user (ZooKeeper hides a digest hash, shown as x, from others), take all but r from world:anyone, and setAcl %s to the sum", shownACL(own), n, n)
	}
	for _, g := range got {
		if g.Scheme == "world" {
			continue // want grants everyone READ, and no more
		}
		if i := slices.IndexFunc(want, func(w zk.ACL) bool { return w.Scheme == g.Scheme && w.ID == g.ID }); i >= 0 {
			want[i].Perms |= g.Perms
			continue
		}
		want = append(want, g)
	}
	return setACLCommand(n, want) + " (it keeps the other identities " + n + " names; name there any other that shares it too)"
}
