package elect

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// A root is a path of herald's own outside every group, which holds the
// ephemeral nodes of every herald session that uses it: the session root
// (session nodes, run notes) and the bridges' sources root (claims).
// Their names are public (they follow from a session's id, or a source's
// name), so anyone who may create in a root may make a node there under
// herald's name first: a claim that stops a bridge as a duplicate, a
// session node that costs its session the proof of its end, a run note
// that keeps a group's next runner waiting. A root herald makes lets
// anyone create there only where the nodes' ACL lets anyone write too
// (a session without credentials or --zk-acl, whose nodes anyone may
// delete anyway); else only the identities that ACL lets write.

// rootOpen reports whether herald's nodes of ACL acl let anyone write,
// delete or administer them: the root made for them then lets anyone
// create, as it always did.
func rootOpen(acl []zk.ACL) bool {
	return slices.ContainsFunc(ParentACL(acl), func(a zk.ACL) bool {
		return a.Scheme == "world" && a.Perms&zk.PermCreate != 0
	})
}

// rootACL is the ACL herald gives a root it makes for nodes of ACL acl:
// ParentACL's, with READ for everyone (every copy lists and reads it),
// and CREATE for everyone where acl is open (see rootOpen).
func rootACL(acl []zk.ACL) []zk.ACL {
	if rootOpen(acl) {
		return withAnyone(ParentACL(acl), zk.PermCreate|zk.PermRead)
	}
	return withAnyone(ParentACL(acl), zk.PermRead)
}

// MakeRoot creates the root p, for nodes of the session's default ACL,
// and the shared path above it (see MakeSharedPath), where missing. The
// root lets anyone create only where that ACL lets anyone write (see
// rootACL); to let several identities create there, name each in the ACL
// (--zk-acl), or create the root with the ACL you want first.
func MakeRoot(s *Session, p string) error {
	if err := ValidatePath(p); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout())
	defer cancel()
	return makeRoot(ctx, s.Conn(), p, s.DefaultACL(), s.digestACL)
}

// makeRoot is MakeRoot with acl. A root closed to others closes its
// parent herald makes too (/herald, above /herald/sessions and
// /herald/sources), READ left to all: open to anyone's create, it let a
// client without credentials make the other root first, with an ACL of
// its own that shut herald's identities out or let anyone in. The nodes
// above the parent (/a of /a/b/sessions) hold no root of herald's, and
// stay open to create as before: closed, they shut out every other
// identity's root beside ours (/a/c/sessions), for nothing.
// A node on the way that refuses us (another identity's /herald) is
// named as RootRefused names a root, with its ACL and what admits us:
// "give every copy an --zk-acl" changes no node already made. digest is
// the session's digestACL.
func makeRoot(ctx context.Context, conn *zk.Conn, p string, acl, digest []zk.ACL) error {
	if rootOpen(acl) {
		return makeSharedPath(conn, p, acl)
	}
	var err error
	if above := path.Dir(path.Dir(p)); above != "/" {
		err = makeSharedPath(conn, above, acl)
	}
	if err == nil {
		err = makePath(conn, p, rootACL(acl))
	}
	var r *refusedBelow
	if errors.As(err, &r) {
		return fmt.Errorf("creating %s: %w", r.node, rootRefused(ctx, conn, path.Dir(r.node), namedACL(acl, digest), r.err))
	}
	return err
}

// CheckRoot tells, for a session whose default ACL lets no one else
// write, whether the root p, or the shared path above it (/herald),
// lets anyone create all the same (made by an older herald, which opened
// every root to all, or by someone else before herald made it): the
// error says so and what to run. nil when both are as they should be, or
// missing; an error wrapping ErrRootUnchecked when an ACL could not be
// read and the other shows nothing open, which tells nothing: check
// again.
func CheckRoot(ctx context.Context, s *Session, p string) error {
	return checkRoot(ctx, s.Conn(), p, namedACL(s.DefaultACL(), s.digestACL))
}

// checkRoot is CheckRoot with acl.
func checkRoot(ctx context.Context, conn *zk.Conn, p string, acl []zk.ACL) error {
	if rootOpen(acl) {
		return nil
	}
	var open []string
	var unread error
	for _, n := range []string{p, path.Dir(p)} {
		if n == "/" {
			continue // the top of the tree is the ensemble's, not herald's
		}
		got, err := readRootACL(ctx, conn, n)
		if err != nil {
			// Said alone only where nothing open was found: a parent
			// closed to our reads (getAcl wants READ or ADMIN) hid
			// the root found open, for good.
			unread = err
			continue
		}
		if got == nil || !rootOpen(got) {
			continue
		}
		what := "a client without credentials may make nodes under herald's names first"
		if n != p {
			what = fmt.Sprintf("a client without credentials may make a root of herald's there (a sibling of %s, as /herald/sources is of /herald/sessions) before herald does, with an ACL of its own", p)
		}
		open = append(open, fmt.Sprintf("%s lets anyone create there (ACL %s), so %s; let only herald's identities create there: %s", n, shownACL(got), what, closingAdvice(n, got, acl)))
	}
	if len(open) == 0 {
		return unread
	}
	return errors.New("elect: " + strings.Join(open, "; and "))
}

// readRootACL is n's ACL, nil when n is missing. A failed read is an
// error wrapping ErrRootUnchecked: a lost connection says nothing of the
// ACL, and taken for a closed root an open one went unwarned for the
// session's life.
func readRootACL(ctx context.Context, conn *zk.Conn, n string) ([]zk.ACL, error) {
	got, _, err := call2(ctx, func() ([]zk.ACL, *zk.Stat, error) { return conn.GetACL(n) })
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%w: reading the ACL of %s: %w", ErrRootUnchecked, n, err)
	}
	return got, nil
}

// checkSessionRoot warns, once per session and root, that our session
// root lets anyone create (see checkRoot). A check whose read failed is
// forgotten, so that the next node's create checks again; not one
// refused the read (zk.ErrNoAuth: getAcl wants READ or ADMIN), which
// every later node's would be too, at two reads each.
func (q *queue) checkSessionRoot(ctx context.Context, root string) {
	if _, done := q.s.rootsChecked.LoadOrStore(root, struct{}{}); done {
		return
	}
	err := checkRoot(ctx, q.s.Conn(), root, namedACL(q.o.acl, q.s.digestACL))
	switch {
	case errors.Is(err, zk.ErrNoAuth):
		q.s.log.Debug("the session root's ACL is unchecked: this identity may not read it", "root", root, "err", err)
	case errors.Is(err, ErrRootUnchecked):
		q.s.rootsChecked.Delete(root)
		q.s.log.Debug("the session root's ACL is unchecked, to be checked at the next node", "root", root, "err", err)
	case err != nil:
		q.s.log.Warn("the session root, or the path above it, lets anyone create: a waiter may lose the proof of our session's end, and a runner be kept waiting by a note planted in its group's name", "root", root, "err", err)
	}
}

// rootRefusedHint says what to do when the root p refuses this identity's
// create, where its ACL could not be read: a root herald made for another
// identity (with credentials or --zk-acl it admits only the identities
// its ACL lets write).
func rootRefusedHint(p string) string {
	return fmt.Sprintf("%s does not let this identity create there (made for another identity, or by hand): give every copy that shares it an --zk-acl naming each identity before %s is made, which it then admits, or setAcl %s to an ACL that grants each of them CREATE", p, p, p)
}

// RootRefused is the error of a session whose create under the root p
// was refused (zk.ErrNoAuth, err): it names the root's ACL and the setAcl
// that would admit this session's identities too, beside those it
// admits; where the ACL cannot be read, it says what to do in words.
// ZooKeeper shows a digest id's hash only to a client that may
// administer the node (user:x to the others, which a refused identity
// is): an ACL with a hidden hash is no setAcl to print, as run it would
// lock that identity out, so the error names the entries to add instead.
func RootRefused(ctx context.Context, s *Session, p string, err error) error {
	return rootRefused(ctx, s.Conn(), p, namedACL(s.DefaultACL(), s.digestACL), err)
}

// rootRefused is RootRefused with acl, the ACL of the refused nodes with
// its identities named (see namedACL).
func rootRefused(ctx context.Context, conn *zk.Conn, p string, acl []zk.ACL, err error) error {
	got, _, gerr := call2(ctx, func() ([]zk.ACL, *zk.Stat, error) { return conn.GetACL(p) })
	if gerr != nil {
		return fmt.Errorf("%s: %w", rootRefusedHint(p), err)
	}
	want := admitting(got, acl)
	if slices.Equal(want, got) { // no identity of ours it can name (auth:: of a certificate)
		return fmt.Errorf("%s (ACL %s): %w", rootRefusedHint(p), shownACL(got), err)
	}
	if slices.ContainsFunc(got, hiddenDigest) {
		add := slices.DeleteFunc(want, func(a zk.ACL) bool { return slices.Contains(got, a) })
		return fmt.Errorf("%s does not let this identity create there (ACL %s; made for another identity, or by hand): to admit it beside the others, add %s to the ACL that getAcl %s shows its maker or the super user (ZooKeeper hides a digest hash, shown as x, from others), and %s; or give each of them an --zk-acl naming every identity before %s is made: %w",
			p, shownACL(got), entriesToAdd(add), p, setTheSum(p, add), p, err)
	}
	return fmt.Errorf("%s does not let this identity create there (ACL %s; made for another identity, or by hand): to admit it beside the others, %s, or give each of them an --zk-acl naming every identity before %s is made: %w",
		p, shownACL(got), setACLCommand(p, want), p, err)
}

// namedACL is acl, a session's, with each auth:: entry, which names the
// identities of whoever creates or sets an ACL with it, naming the
// session's digest identity (digest, the session's digestACL) instead:
// a setAcl run by someone else, or a refused identity's ACL read by
// another, must name it. Without one (a certificate's subject is not
// known here) the entry stays auth::, which zkCli's setAcl refuses
// without addauth, rather than be dropped, which would lock it out.
func namedACL(acl, digest []zk.ACL) []zk.ACL {
	var out []zk.ACL
	for _, a := range acl {
		if a.Scheme != "auth" || len(digest) == 0 {
			out = append(out, a)
			continue
		}
		for _, d := range digest {
			out = append(out, zk.ACL{Scheme: d.Scheme, ID: d.ID, Perms: a.Perms})
		}
	}
	return out
}

// hiddenDigest reports whether a, read with GetACL, is a digest entry
// whose hash ZooKeeper hid from the reader (user:x).
func hiddenDigest(a zk.ACL) bool { return a.Scheme == "digest" && !digestID(a.ID) }

// admitting is the root ACL got with create, read and delete added for
// each identity that acl, the ACL of a session's nodes, lets write.
func admitting(got, acl []zk.ACL) []zk.ACL {
	out := slices.Clone(got)
	for _, a := range ParentACL(acl) {
		if a.Perms&zk.PermCreate == 0 || a.Scheme == "auth" {
			continue // auth:: would name the identities of whoever runs setAcl
		}
		i := slices.IndexFunc(out, func(b zk.ACL) bool { return b.Scheme == a.Scheme && b.ID == a.ID })
		if i < 0 {
			out = append(out, zk.ACL{Scheme: a.Scheme, ID: a.ID})
			i = len(out) - 1
		}
		out[i].Perms |= zk.PermCreate | zk.PermRead | zk.PermDelete
	}
	return out
}

// refusedBy is the error of our create that the session root refused
// (err): the root's ACL and what admits us beside its maker (see
// rootRefused), or a root of our own. The hint alone said to give every
// copy an --zk-acl naming each identity, which changes no root already
// made, or to setAcl the root, with no ACL named.
func (q *queue) refusedBy(ctx context.Context, root string, err error) error {
	return fmt.Errorf("%w; or give this identity its own --session-root", rootRefused(ctx, q.s.Conn(), root, namedACL(q.o.acl, q.s.digestACL), err))
}

// sessionRootRefused warns, once per session and root, that the session
// root refuses our session node, or (err, not nil) that a node above it
// refused the root's create: a waiter behind our nodes keeps its bound
// should they go without a release. The second was a debug line alone,
// though another identity's /herald (a bridge's, made first) refuses it
// for good.
func (q *queue) sessionRootRefused(ctx context.Context, root string, err error) {
	if _, done := q.s.rootsChecked.LoadOrStore(root+"\x00refused", struct{}{}); done {
		return
	}
	if err == nil {
		err = q.refusedBy(ctx, root, zk.ErrNoAuth)
	} else {
		err = fmt.Errorf("%w; or give this identity its own --session-root", err)
	}
	q.s.log.Warn("no session node: a waiter behind our node cannot learn our session's end, and waits its bound should our node go without a release", "group", q.parent, "hint", err.Error())
}

// checkGroup warns, once per session and group, where our nodes admit no
// one else to write but the group node, which someone else made, lets
// anyone write, create or delete there: any client may then write a
// release on the group node that lets the next owner start beside a
// running one, or delete an owner's node, and herald's credentials
// protect nothing. Made so on purpose (a group shared with clients
// without credentials), it is said once; made first by someone else
// (anyone may create under an open parent), the setAcl closes it. It
// runs in the background, after our node's create.
func (q *queue) checkGroup() {
	if rootOpen(q.o.acl) {
		return
	}
	if _, done := q.s.groupsChecked.LoadOrStore(q.parent, struct{}{}); done {
		return
	}
	q.s.background(func() {
		ctx, cancel := context.WithTimeout(context.Background(), q.s.Timeout())
		defer cancel()
		q.checkGroupACL(ctx)
	})
}

// checkGroupACL is checkGroup's look at the group's ACL. A read that
// failed (the connection lost) is forgotten, so that the next node's
// create looks again: taken for a closed group, an open one went
// unwarned for the session's life.
func (q *queue) checkGroupACL(ctx context.Context) {
	got, _, err := call2(ctx, func() ([]zk.ACL, *zk.Stat, error) { return q.s.Conn().GetACL(q.parent) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		q.s.groupsChecked.Delete(q.parent)
		q.s.log.Debug("the group's ACL is unchecked, to be checked at the next node", "group", q.parent, "err", err)
	}
	if err != nil || !rootOpen(got) {
		return
	}
	q.s.log.Warn("the group lets anyone write, create or delete there, so herald's credentials protect nothing in it: any client may write a release on the group node that lets the next owner start beside a running one, or delete an owner's node; unless it was made so for clients without credentials, let only its participants' identities change it",
		"group", q.parent, "acl", shownACL(got), "fix", setACLCommand(q.parent, ParentACL(namedACL(q.o.acl, q.s.digestACL))))
}
