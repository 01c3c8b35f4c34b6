package elect

import (
	"fmt"
	"slices"
	"strings"

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
		return fmt.Sprintf("add %s to the ACL that getAcl %s shows its maker or the super user (ZooKeeper hides a digest hash, shown as x, from others), take all but r from world:anyone, and %s", entriesToAdd(own), n, setTheSum(n, own))
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

// entriesToAdd writes acl as entries to add to an ACL: in zkCli's
// notation, unless an id holds a comma (an x509 subject, CN=a,O=b), which
// zkCli's setAcl cannot take at all (it splits its ACL at every comma,
// with no quoting or escape, and drops the pieces that are no
// scheme:id:perms): then one entry a line, to set with a client library.
func entriesToAdd(acl []zk.ACL) string {
	if !slices.ContainsFunc(acl, func(a zk.ACL) bool { return strings.Contains(a.ID, ",") }) {
		return shownACL(acl)
	}
	lines := make([]string, len(acl))
	for i, a := range acl {
		lines[i] = "\n  " + shownACL([]zk.ACL{a})
	}
	return "these entries, one a line (zkCli's setAcl splits its ACL at every comma, an x509 subject's too, and cannot take them: set the ACL with a client library's setACL):" + strings.Join(lines, "") + "\n"
}

// setACLCommand is what to run to set p's ACL to acl: zkCli's setAcl,
// unless an id holds a comma (an x509 subject, CN=host,O=Example), as
// the shell splits its ACL at every comma, skips the pieces that are no
// scheme:id:perms, and sets the rest: run as printed, it dropped those
// identities, and a root left creatable by no one cost every copy its
// session node and run note. Such an ACL is set with a client library,
// its entries one a line, as a list joined by commas reads as zkCli's.
func setACLCommand(p string, acl []zk.ACL) string {
	if slices.ContainsFunc(acl, func(a zk.ACL) bool { return strings.Contains(a.ID, ",") }) {
		return fmt.Sprintf("set the ACL of %s to %s", p, entriesToAdd(acl))
	}
	return "setAcl " + p + " " + shownACL(acl)
}

// setTheSum says how to set p's ACL to the sum of its entries and add:
// with zkCli's setAcl, unless an id of add holds a comma (see
// entriesToAdd).
func setTheSum(p string, add []zk.ACL) string {
	if slices.ContainsFunc(add, func(a zk.ACL) bool { return strings.Contains(a.ID, ",") }) {
		return "set the ACL of " + p + " to the sum with a client library's setACL"
	}
	return "setAcl " + p + " to the sum"
}
