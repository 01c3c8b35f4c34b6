package elect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// A session node is an ephemeral node, session-<session id in hex>-live,
// which each herald participant's session makes with its first queue node
// in a group (under ProveSessionEnd, as `herald run` and `herald lock`
// set): in an election's office, or, for a group that may hold no office
// (a lock, an election named for Curator's mutex, see sideNodesRefused),
// under the session root, a path outside every group (DefaultSessionRoot).
// ZooKeeper cannot tell one client whether another's session lives, but it
// deletes every ephemeral node of a session that ends. So a waiter that
// saw the owner's session node while that owner's node was there, and
// finds it gone after that node went, knows the owner's session ended:
// for the owner's runner, which stops its work before its session can
// expire (see Handle.PredecessorReleased), that proves the work stopped.
// Without it, a node gone without a release may have been deleted by hand
// while its owner could not hear (frozen, or cut off), and the next
// runner has to wait for the longest such an owner takes to stop.
//
// The node ends in letters, so no recipe and no discovery takes it for a
// queue node (in the office, which they skip anyway, or in the root,
// which holds no group). One session keeps one node under a root, however
// many groups it joins; the node names the session alone.

// sessionNodeName is the session node of session id.
func sessionNodeName(session int64) string {
	return fmt.Sprintf("session-%016x-live", uint64(session))
}

// sessionNodeOf is the path of the session node of the session that made
// the herald node name in our group, where it made it; "" when name is not
// herald's, or its kind of group keeps it under a root we keep none in.
// It matches inOffice: the name tells the recipe and the dialect.
func (q *queue) sessionNodeOf(name string) string {
	return sessionNodeUnder(q.parent, name, q.o.sessionRoot)
}

// sessionNodeUnder is where the herald participant that made the queue
// node name in group keeps its session node: in the election's office, or
// under root for a group that may hold no office ("" when root is "").
// "" for a name that is not herald's.
func sessionNodeUnder(group, name, root string) string {
	id, _, ok := heraldNode(name)
	switch {
	case !ok || id.session == 0:
		return ""
	case sideNodesRefused(group, name) == nil:
		return group + "/" + OfficeNode + "/" + sessionNodeName(id.session)
	case root == "":
		return ""
	}
	return root + "/" + sessionNodeName(id.session)
}

// inOffice reports whether our nodes in dialect d keep their session node
// in the group's office (an election's, not named for Curator's mutex),
// rather than under the session root.
func (q *queue) inOffice(d Dialect) bool {
	return q.recipe == RecipeElection && d != DialectCuratorLock
}

// keepsSessionNode reports whether our nodes in dialect d get a session
// node (under ProveSessionEnd): in the office, or under a session root.
func (q *queue) keepsSessionNode(d Dialect) bool {
	return q.inOffice(d) || q.o.sessionRoot != ""
}

// createAlone creates our queue node (base) without a session node.
func (q *queue) createAlone(conn *zk.Conn, base string, data []byte) (string, error) {
	return conn.Create(q.full(base), data, zk.FlagEphemeral|zk.FlagSequence, q.o.acl)
}

// createNode creates our queue node (base, in dialect d). The first time
// in a session, our session node goes in the same transaction, and the
// office too when the group has none yet: so the session node is there
// whenever our queue node is, and an office made for it takes the
// group's sequence number just before our node's (madeOffice; see
// releasedJustBefore). Where the session node cannot be made (the
// office's ACL refuses it), our node is created alone, and a waiter behind
// it keeps its bound should it go without a release.
func (q *queue) createNode(ctx context.Context, conn *zk.Conn, base string, d Dialect, data []byte) (name string, madeOffice bool, err error) {
	sid := q.s.ID()
	switch {
	case !q.o.sessionProof || q.sessionNode.Load() == sid || !q.keepsSessionNode(d):
		name, err := q.createAlone(conn, base, data)
		return name, false, err
	case !q.inOffice(d):
		name, err := q.createUnderRoot(ctx, conn, base, data)
		return name, false, err
	}
	acl := q.sideACL(ctx)
	officeData, _ := json.Marshal(Office{Herald: 1})
	office := &zk.CreateRequest{Path: q.full(OfficeNode), Data: officeData, Acl: acl}
	live := &zk.CreateRequest{Path: q.full(OfficeNode) + "/" + sessionNodeName(sid), Data: sessionNodeContent(q.s.Timeout(), q.o.waits), Acl: acl, Flags: zk.FlagEphemeral}
	node := &zk.CreateRequest{Path: q.full(base), Data: data, Acl: q.o.acl, Flags: zk.FlagEphemeral | zk.FlagSequence}
	withOffice := false
	for try := 0; try < 4; try++ {
		ops := []any{live, node}
		if withOffice {
			ops = []any{office, live, node}
		}
		res, err := conn.Multi(ops...)
		at := func(op any, want error) bool {
			i := slices.Index(ops, op)
			return i >= 0 && failedAt(res, i, want)
		}
		switch {
		case err == nil:
			q.madeSessionNode(live.Path)
			return res[len(res)-1].String, withOffice, nil
		case at(live, zk.ErrNoNode) && !withOffice:
			withOffice = true // no office yet
		case at(office, zk.ErrNodeExists):
			withOffice = false // made by someone else meanwhile
		case at(office, zk.ErrNoNode):
			return "", false, zk.ErrNoNode // the group is missing
		case at(live, zk.ErrNodeExists):
			q.foundSessionNode(ctx, conn, live.Path) // made with an earlier node of ours, or squatted
			name, err := q.createAlone(conn, base, data)
			return name, false, err
		case at(office, zk.ErrNoAuth), at(live, zk.ErrNoAuth), at(live, zk.ErrNoChildrenForEphemerals):
			q.noSessionNode(sid, fmt.Errorf("%s refuses it (its ACL, or the group's, or it is an ephemeral node)", q.full(OfficeNode)))
			name, err := q.createAlone(conn, base, data)
			return name, false, err
		case at(office, zk.ErrNoChildrenForEphemerals):
			return "", false, zk.ErrNoChildrenForEphemerals
		case at(node, zk.ErrNoAuth):
			return "", false, zk.ErrNoAuth
		default:
			return "", false, err
		}
	}
	return "", false, fmt.Errorf("elect: %s/%s keeps being created and deleted: %w", q.parent, OfficeNode, zk.ErrNodeExists)
}

// seeSessionNode looks, while our predecessor (t.prev: the node just
// below ours at the last listing, see notePrev) is there, for its
// session node, and records in the ticket whether it was there
// (ProveSessionEnd). Only a node seen can later prove, by its
// absence, that the owner's session ended. A failed look records nothing.
// The node seen stays watched (see doubtSessionNode).
func (w *waiter) seeSessionNode(ctx context.Context) {
	p := w.t.prev
	if !w.q.o.sessionProof || p == "" || p == w.seenSession {
		return
	}
	w.seenSession = p
	w.t.prevSession = nil
	node := w.q.sessionNodeOf(p)
	if node == "" {
		return
	}
	id, _, _ := heraldNode(p)
	// A node our session already watches (the same owner's session led
	// before) keeps its watch and its trust: one watch per session node,
	// however often that session leads.
	trust, watching := w.q.s.sessionWatches.Load(node)
	type look struct {
		found bool
		st    *zk.Stat
		ch    <-chan zk.Event
	}
	l, err := call(ctx, func() (look, error) {
		if watching {
			found, st, err := w.q.s.Conn().Exists(node)
			return look{found: found, st: st}, err
		}
		// Read, not only watched: its data carries the owner's session
		// timeout (see LongestTimeoutSeen). A node we may not read is
		// watched as before, for the proof alone.
		b, st, ch, err := w.q.s.Conn().GetW(node)
		switch {
		case err == nil:
			w.q.s.noteTimeout(node, timeoutIn(b))
		case errors.Is(err, zk.ErrNoNode):
			w.q.s.noteTimeout(node, 0)
			return look{}, nil
		case errors.Is(err, zk.ErrNoAuth):
			found, st, ch, err := w.q.s.Conn().ExistsW(node)
			return look{found, st, ch}, err
		}
		return look{true, st, ch}, err
	})
	seen := err == nil && l.found && l.st.EphemeralOwner == id.session
	switch {
	case seen && watching:
		w.t.prevSession = trust.(*sessionTrust)
		w.t.prevSession.owner.Store(w.q.full(p))
	case seen:
		w.t.prevSession = &sessionTrust{}
		w.t.prevSession.ok.Store(true)
		w.t.prevSession.owner.Store(w.q.full(p))
		w.q.s.sessionWatches.Store(node, w.t.prevSession)
		go w.q.doubtSessionNode(node, l.ch, w.t.prevSession)
	}
	if f := sessionLooked.Load(); f != nil {
		(*f)(p, seen && w.t.prevSession.ok.Load())
	}
}

// sessionTrust is what a session watches of another's session node: ok
// while it is trusted to go only with its session, and owner, the path
// of the latest queue node of that session a wait saw there with it.
type sessionTrust struct {
	ok    atomic.Bool
	owner atomic.Value // string
}

// doubtSessionNode watches a session node seen (node, watched by ch)
// while the owner's queue node (trust.owner, the latest seen) was there:
// deleted while that owner's node, an ephemeral node of the same session,
// still exists, it was deleted by hand (an office reset with deleteall),
// not by the session's end, and its absence proves nothing any more
// (trust turns false). So does a deletion whose check fails. It ends with
// the watch: on a deletion, or with our session.
func (q *queue) doubtSessionNode(node string, ch <-chan zk.Event, trust *sessionTrust) {
	defer q.s.sessionWatches.Delete(node)
	conn := q.s.Conn()
	// deleted judges the session node's deletion: by hand while the
	// owner's node was still there, it proves nothing.
	deleted := func() {
		there, _, err := conn.Exists(trust.owner.Load().(string))
		if err != nil || there {
			trust.ok.Store(false)
		}
	}
	for {
		ev := <-ch
		switch ev.Type {
		case zk.EventNodeDeleted:
			deleted()
			return
		case zk.EventNodeDataChanged:
			// Written (its session's note of a deletion, see
			// sessionNote): watch it again. Gone meanwhile (a release
			// noted there, and the session closed at once), it is
			// judged as a deletion seen.
			found, _, again, err := conn.ExistsW(node)
			switch {
			case err != nil:
				trust.ok.Store(false)
				return
			case !found:
				deleted()
				return
			}
			ch = again
		default:
			return // our session ended, or stopped watching
		}
	}
}

// sessionLooked, when set (by tests), is told each look seeSessionNode
// made: at whose node, and whether it saw that owner's session node.
var sessionLooked atomic.Pointer[func(prev string, seen bool)]

// Why a look could not prove that the predecessor's session ended (see
// SessionEndUnproven): each names what the waiter saw, so an operator
// reading why a handover waited its bound knows what to look at.
const (
	unprovenNoSessionNode = "no session node of the previous owner's was seen while its node was there (it keeps none: a library's participant, another --session-root, or an older herald)"
	unprovenDoubted       = "the previous owner's session node was deleted by hand earlier, so its absence proves nothing"
	unprovenHandDeleted   = "the previous owner's node went while its session node stayed: deleted by hand, its session may be alive"
	unprovenParentGone    = "the group or the session root was deleted, which hides how the previous owner's node went"
	unprovenApart         = "the previous owner's node and its session node went in different transactions (deleted by hand one by one), or a copy came or went under either since"
	unprovenUnaccounted   = "copies came or went since this waiter last listed the group, and its listing cannot tell the previous owner's end from theirs"
	unprovenJoined        = "the transaction that last changed the group made a node (a copy joined), so nothing shows the previous owner's end"
	unprovenOtherEnded    = "another copy's session ended in the same moment, so which transaction took the previous owner's node is untold"
)

// predecessorSessionEnded reports whether the session of the owner before
// ours has ended, as its session node, seen while that owner's node was
// there, went with that node. When it cannot tell, the handle keeps why
// (SessionEndUnproven).
func (h *Handle) predecessorSessionEnded(ctx context.Context) (bool, error) {
	why, err := h.sessionEndUnproven(ctx)
	if err == nil && why != "" {
		if prev, _ := h.unproven.Load().(string); why != unprovenDoubted || prev == "" {
			h.unproven.Store(why) // a doubt keeps the look that raised it
		}
	}
	return err == nil && why == "", err
}

// sessionEndUnproven is predecessorSessionEnded's look: "" when the
// predecessor's session ended, else why that is not shown.
func (h *Handle) sessionEndUnproven(ctx context.Context) (string, error) {
	switch {
	case h.t.prevSession == nil:
		return unprovenNoSessionNode, nil
	case !h.t.prevSession.ok.Load():
		return unprovenDoubted, nil
	}
	found, err := call(ctx, func() (bool, error) {
		found, _, err := h.q.s.Conn().Exists(h.q.sessionNodeOf(h.t.prev))
		return found, err
	})
	if err != nil {
		return "", err
	}
	if !found {
		why, err := h.goneTogether(ctx)
		if err == nil && why != "" {
			h.t.prevSession.ok.Store(false) // see goneTogether
		}
		return why, err
	}
	// The owner's node went and its session node is still there: someone
	// deleted the node by hand (a session's end takes both in one
	// transaction, and herald notes its own deletions, which the caller
	// looked for first). Whoever did may delete the session node next, and
	// its going would look like the session's end while the owner, cut off
	// or frozen, still runs: from now on it proves nothing.
	h.t.prevSession.ok.Store(false)
	return unprovenHandDeleted, nil
}

// goneTogether reports ("" for yes, else why not) whether the owner's
// node and its session node, both gone, went in one transaction, as a
// session's end takes them: the last change to the children of the group
// and of the session node's parent is then one zxid (their pzxid).
// Deleted by hand one after the other (an operator forcing over a stuck
// owner, in two commands), both could be gone by our look while the
// owner, cut off or frozen, still runs its command; the pzxids then
// differ, as they do once a later child came or went under either
// parent. Neither proves the session's end, and the waiter keeps its
// bound for that owner. Nor does a later transaction that changed
// children under both parents but took not the owner's node (see
// ownersEndAt).
func (h *Handle) goneTogether(ctx context.Context) (string, error) {
	var pzxid [2]int64
	for i, p := range [2]string{h.q.parent, path.Dir(h.q.sessionNodeOf(h.t.prev))} {
		there, st, err := call2(ctx, func() (bool, *zk.Stat, error) { return h.q.s.Conn().Exists(p) })
		if err != nil {
			return "", err
		}
		if !there {
			return unprovenParentGone, nil // nothing tells how they went
		}
		pzxid[i] = st.Pzxid
	}
	if pzxid[0] != pzxid[1] {
		return unprovenApart, nil
	}
	return h.ownersEndAt(ctx, pzxid[0])
}

// groupListing is one listing of a group: every child it had, and the
// group's counter of creates then (see counter).
type groupListing struct {
	children []string
	next     int32
}

// ownersEndAt reports ("" for yes, else why not) whether transaction
// zxid, the last child change under the group, is the one that took the
// owner's node. Two others change children under the group and the
// session node's parent at once too: a copy joining on a new session (its
// node and its session node, made in one) and another session's end (its
// node and its session node, taken in one). The group's counter tells how
// many children came since the listing that showed the owner's node
// (t.prevListing, the last before its end when the waiter next in line
// kept it fresh, see watchListing), and the two listings which: none made
// at zxid, and every other node gone since with its session node still
// there (its session alive, so not ended at zxid), zxid took the owner's.
// A child that came and went unseen between the listings, or a node gone
// with its session node, leaves it untold, and that is no proof.
func (h *Handle) ownersEndAt(ctx context.Context, zxid int64) (string, error) {
	c := h.q.s.Conn()
	type listing struct {
		c  []string
		st *zk.Stat
	}
	l, err := call(ctx, func() (listing, error) {
		ch, st, err := c.Children(h.q.parent)
		return listing{ch, st}, err
	})
	if err != nil {
		return "", err
	}
	if l.st.Pzxid != zxid {
		// A child came or went since the parents were read: the last
		// change is another, and nothing tells of the one at zxid.
		return unprovenApart, nil
	}
	was := h.t.prevListing
	_, next := parseListing(l.c, l.st.Cversion)
	made, gone := childrenDiff(was.children, l.c)
	if was.children == nil || int(next-was.next) != len(made) || !slices.Contains(gone, h.t.prev) {
		return unprovenUnaccounted, nil
	}
	for _, n := range made {
		there, st, err := call2(ctx, func() (bool, *zk.Stat, error) { return c.Exists(h.q.full(n)) })
		switch {
		case err != nil:
			return "", err
		case !there:
			return unprovenApart, nil // gone since: a later change, so no proof either way
		case st.Czxid == zxid:
			return unprovenJoined, nil
		}
	}
	for _, n := range gone {
		if n == h.t.prev {
			continue
		}
		if alive, err := h.sessionNodeThere(ctx, n); err != nil || !alive {
			return unprovenOtherEnded, err
		}
	}
	return "", nil
}

// childrenDiff is the children of now not in was (made), and of was not
// in now (gone).
func childrenDiff(was, now []string) (made, gone []string) {
	return notIn(now, was), notIn(was, now)
}

// notIn is the names of a not in b (setDiff's, listed): a map, not a
// search of b for each, so a group of thousands costs no square.
func notIn(a, b []string) []string {
	in := make(map[string]struct{}, len(b))
	for _, x := range b {
		in[x] = struct{}{}
	}
	var out []string
	for _, x := range a {
		if _, ok := in[x]; !ok {
			out = append(out, x)
		}
	}
	return out
}

// sessionNodeThere reports whether the session node of the session that
// made the group's node name is there, that session's own: its session
// has not ended.
func (h *Handle) sessionNodeThere(ctx context.Context, name string) (bool, error) {
	node := h.q.sessionNodeOf(name)
	id, _, ok := heraldNode(name)
	if node == "" || !ok {
		return false, nil
	}
	there, st, err := call2(ctx, func() (bool, *zk.Stat, error) { return h.q.s.Conn().Exists(node) })
	return err == nil && there && st.EphemeralOwner == id.session, err
}

// noSessionNode gives up on our session's node in this group for good.
func (q *queue) noSessionNode(sid int64, err error) {
	q.sessionNode.Store(sid)
	q.s.log.Debug("no session node: a waiter behind our node waits its bound should our node go without a release",
		"group", q.parent, "err", err)
}

// createUnderRoot creates our queue node (base) and, in the same
// transaction, our session node under the session root, making the root
// first when it is missing. Where the root refuses it (its ACL, or the
// ACL above it; a root someone made ephemeral), our node is created alone.
// A session node already there is ours when our session made it (with a
// node in another group; see foundSessionNode).
func (q *queue) createUnderRoot(ctx context.Context, conn *zk.Conn, base string, data []byte) (string, error) {
	sid, root := q.s.ID(), q.o.sessionRoot
	plain := func() (string, error) { return q.createAlone(conn, base, data) }
	live := &zk.CreateRequest{Path: root + "/" + sessionNodeName(sid), Data: sessionNodeContent(q.s.Timeout(), q.o.waits), Acl: q.o.acl, Flags: zk.FlagEphemeral}
	node := &zk.CreateRequest{Path: q.full(base), Data: data, Acl: q.o.acl, Flags: zk.FlagEphemeral | zk.FlagSequence}
	for try := 0; try < 4; try++ {
		res, err := conn.Multi(live, node)
		switch {
		case err == nil:
			q.madeSessionNode(live.Path)
			q.checkSessionRoot(ctx, root)
			return res[1].String, nil
		case failedAt(res, 0, zk.ErrNoNode):
			if err := makeRoot(ctx, conn, root, q.o.acl, q.s.digestACL); err != nil {
				if errors.Is(err, zk.ErrNoAuth) { // a node above the root refuses it
					q.sessionRootRefused(ctx, root, err)
				}
				q.noSessionNode(sid, err)
				return plain()
			}
		case failedAt(res, 0, zk.ErrNodeExists):
			q.foundSessionNode(ctx, conn, live.Path) // ours, made with a node in another group, or squatted
			q.checkSessionRoot(ctx, root)
			return plain()
		case failedAt(res, 0, zk.ErrNoAuth):
			q.sessionRootRefused(ctx, root, nil)
			q.noSessionNode(sid, fmt.Errorf("the session root %s refuses it (its ACL)", root))
			return plain()
		case failedAt(res, 0, zk.ErrNoChildrenForEphemerals):
			q.noSessionNode(sid, fmt.Errorf("the session root %s refuses it (it is an ephemeral node)", root))
			return plain()
		case failedAt(res, 1, zk.ErrNoNode):
			return "", zk.ErrNoNode // the group is missing
		case failedAt(res, 1, zk.ErrNoAuth):
			return "", zk.ErrNoAuth
		case failedAt(res, 1, zk.ErrNoChildrenForEphemerals):
			return "", zk.ErrNoChildrenForEphemerals
		default:
			return "", err
		}
	}
	return "", fmt.Errorf("elect: the session root %s keeps being deleted: %w", root, zk.ErrNoNode)
}

// MakeSharedPath creates p and the nodes above it where missing:
// persistent, with the session's default ACL and CREATE and READ for
// anyone, so that every identity may keep a node there, whichever made
// the path (the session root; the bridges' source claims).
func MakeSharedPath(s *Session, p string) error {
	if err := ValidatePath(p); err != nil {
		return err
	}
	return makeSharedPath(s.Conn(), p, s.DefaultACL())
}

// withAnyone is a copy of acl that grants everyone perms too, besides
// what it granted.
func withAnyone(acl []zk.ACL, perms int32) []zk.ACL {
	out := slices.Clone(acl)
	if i := slices.IndexFunc(out, func(a zk.ACL) bool { return a.Scheme == "world" && a.ID == "anyone" }); i >= 0 {
		out[i].Perms |= perms
		return out
	}
	return append(out, zk.ACL{Perms: perms, Scheme: "world", ID: "anyone"})
}

// ParentACL is the ACL herald gives a parent it creates for nodes of ACL
// acl: acl with create, read and delete added for every identity it lets
// write, delete or administer. Nodes need no create permission, but their
// parent must let them in, and ZooKeeper checks a delete against the
// parent. An identity that may only read the nodes (everyone, with digest
// credentials) may only read the parent: it can watch and observe, not
// join or delete.
func ParentACL(acl []zk.ACL) []zk.ACL {
	out := make([]zk.ACL, len(acl))
	for i, a := range acl {
		if a.Perms&(zk.PermWrite|zk.PermDelete|zk.PermAdmin) != 0 {
			a.Perms |= zk.PermCreate | zk.PermRead | zk.PermDelete
		}
		out[i] = a
	}
	return out
}

// makeSharedPath is MakeSharedPath with acl. The nodes get ParentACL's
// additions too: with acl as it stood (auth::rwa) the identity that made
// the path could not delete it, nor the nodes below it of others.
func makeSharedPath(conn *zk.Conn, root string, acl []zk.ACL) error {
	return makePath(conn, root, withAnyone(ParentACL(acl), zk.PermCreate|zk.PermRead))
}

// makePath creates p and the nodes above it where missing, persistent,
// with ACL acl. A node that refuses a create below it is named, with what
// to do: ZooKeeper's "not authenticated" names neither.
func makePath(conn *zk.Conn, p string, acl []zk.ACL) error {
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		_, err := conn.Create(p[:i], nil, 0, acl)
		switch {
		case errors.Is(err, zk.ErrNoAuth):
			return &refusedBelow{node: p[:i], err: err}
		case err != nil && !errors.Is(err, zk.ErrNodeExists):
			return fmt.Errorf("creating %s: %w", p[:i], err)
		}
	}
	return nil
}

// refusedBelow is makePath's error where the node above node refused its
// create (zk.ErrNoAuth).
type refusedBelow struct {
	node string
	err  error
}

func (r *refusedBelow) Error() string {
	return fmt.Sprintf("creating %s: %s: %v", r.node, rootRefusedHint(path.Dir(r.node)), r.err)
}

func (r *refusedBelow) Unwrap() error { return r.err }

// madeSessionNode records that our session's session node is at p (made
// now, or by an earlier node of ours).
func (q *queue) madeSessionNode(p string) {
	q.sessionNode.Store(q.s.ID())
	q.s.ownSessionNodes.Store(p, struct{}{})
}

// foundSessionNode judges the session node at p that our create found
// already there: ours when our session made it, with an earlier node of
// ours. Anyone who may create where it is (an open session root or
// office) may have made it first, since its name follows from our
// session's id, which ZooKeeper hands out one after another. Taken for
// ours, it got our release notes, which no reader trusts on another
// session's node, and ReleasesRecorded said our releases were recorded.
// So another's, or one we cannot tell, gives up the session node.
func (q *queue) foundSessionNode(ctx context.Context, conn *zk.Conn, p string) {
	sid := q.s.ID()
	there, st, err := call2(ctx, func() (bool, *zk.Stat, error) { return conn.Exists(p) })
	switch {
	case err == nil && there && st.EphemeralOwner == sid:
		q.madeSessionNode(p)
		return
	case err == nil && there:
		q.s.log.Warn("our session node's name was taken by another session, which anyone who may create there can do, so a waiter behind our node cannot learn our session's end and waits its bound should our node go without a release: let only herald's identities create there (run with credentials or --zk-acl, and setAcl the path's parent to that ACL)",
			"group", q.parent, "node", p, "other_session", fmt.Sprintf("0x%x", uint64(st.EphemeralOwner)))
		err = fmt.Errorf("%s is another session's", p)
	case err == nil:
		err = fmt.Errorf("%s went before it could be told whose it was", p)
	}
	q.noSessionNode(sid, err)
}

// A sessionNote is what a session node holds: the last of its session's
// queue nodes that went by a deletion of its own recorded nowhere else (a
// waiter that gave up, a release where herald may write neither the
// group's mark nor an office), written in the transaction that deleted it.
// An observer that finds the owner's node gone without a release on
// record reads the owner's session node (see reader.readUnrecordedEnd):
// written in the very transaction of the owner's deletion, it says why
// the owner went; there but untouched since before that deletion, the
// session lived and did not delete its node, so someone else did.
type sessionNote struct {
	Herald int    `json:"herald"`
	Group  string `json:"group,omitempty"`
	Node   string `json:"node,omitempty"`
	Reason Reason `json:"reason,omitempty"`
	// Vouches: as a release record's (see Release.Vouches).
	Vouches bool `json:"vouches,omitempty"`
	// TimeoutMS is the session's timeout in milliseconds (see
	// LongestTimeoutSeen), 0 where the writer did not know it.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Waits: the session's participants wait for the owner before them
	// to be shown stopped before they work (see WaitsForPredecessor).
	Waits bool `json:"waits,omitempty"`
}

// sessionNoteWrite is the write, for the transaction that deletes the
// queue node name of group, of why it goes on the session node at p, whose
// session's timeout is timeout (0 when the writer does not know it) and
// which says waits (see WaitsForPredecessor): a note that dropped it would
// cost the session's next tenure its grace.
func sessionNoteWrite(p, group, name string, why Reason, vouches bool, timeout time.Duration, waits bool) *zk.SetDataRequest {
	if why == ReasonNone {
		why = ReasonUnknown
	}
	b, _ := json.Marshal(sessionNote{Herald: 1, Group: group, Node: name, Reason: why, Vouches: vouches, TimeoutMS: timeout.Milliseconds(), Waits: waits})
	return &zk.SetDataRequest{Path: p, Data: b, Version: -1}
}

// deleteNoted deletes the queue node at p and, in the same transaction,
// notes why on the session node at live (see sessionNote; none when live
// is ""). Where that node refuses the note (gone, or its ACL changed),
// refused says so, and the queue node is deleted alone. A queue node
// already gone is zk.ErrNoNode.
func deleteNoted(ctx context.Context, c *zk.Conn, p, live string, why Reason, vouches bool, timeout time.Duration, waits bool) (refused bool, err error) {
	if live != "" {
		res, err := multi(ctx, c, &zk.DeleteRequest{Path: p, Version: -1}, sessionNoteWrite(live, path.Dir(p), path.Base(p), why, vouches, timeout, waits))
		switch {
		case failedAt(res, 0, zk.ErrNoNode):
			return false, zk.ErrNoNode
		case !failedAt(res, 1, zk.ErrNoNode) && !failedAt(res, 1, zk.ErrNoAuth):
			return false, err
		}
		refused = true
	}
	_, err = call(ctx, func() (struct{}, error) { return struct{}{}, c.Delete(p, -1) })
	return refused, err
}

// decodeSessionNote reads a session node's data as sessionNoteWrite
// writes it: ok only for a note naming node in group.
func decodeSessionNote(b []byte, group, node string) (sessionNote, bool) {
	var n sessionNote
	if len(b) == 0 || json.Unmarshal(b, &n) != nil || n.Herald == 0 || n.Group != group || n.Node != node || n.Reason == ReasonNone {
		return sessionNote{}, false
	}
	return n, true
}

// ownSessionNode is the path of our session's session node that goes
// with our queue node name, "" when our session made none there.
func (q *queue) ownSessionNode(name string) string {
	p := q.sessionNodeOf(name)
	if p == "" {
		return ""
	}
	if _, ok := q.s.ownSessionNodes.Load(p); !ok {
		return ""
	}
	if id, _, ok := heraldNode(name); !ok || id.session != q.s.ID() {
		return ""
	}
	return p
}
