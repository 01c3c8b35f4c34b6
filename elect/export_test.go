package elect

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// StrangerMember listens at addr (127.0.0.1:0: any port) as a TLS
// server whose certificate no test trusts, and returns its address.
func StrangerMember(t testing.TB, addr string) string { return strangerMemberAt(t, addr) }

// NoLeaderSyncs turns off s's syncs to the leader, and the suspension
// they would bring, for a test that counts its requests.
func NoLeaderSyncs(s *Session) { s.noSyncs.Store(true) }

// SetRecheckEvery sets how often a watching waiter looks at its nodes
// without a watch, until the returned function restores it.
func SetRecheckEvery(d time.Duration) (restore func()) {
	old := recheckEvery.Swap(int64(d))
	return func() { recheckEvery.Store(old) }
}

// OnSessionLook has fn told of each look a ProveSessionEnd wait makes for
// its owner's session node, until the returned function restores it.
func OnSessionLook(fn func(prev string, seen bool)) (restore func()) {
	sessionLooked.Store(&fn)
	return func() { sessionLooked.Store(nil) }
}

// OnLastLook has fn told of each owner's last look at its group as its
// node is found gone, before the look, until the returned function
// restores it.
func OnLastLook(fn func(owner string)) (restore func()) {
	lastLooked.Store(&fn)
	return func() { lastLooked.Store(nil) }
}

// OnWaitsLook has fn told of each session node an owner's guard reads
// for its waits word (WaitsForPredecessor), before the read, until the
// returned function restores it.
func OnWaitsLook(fn func(owner, sessionNode string)) (restore func()) {
	waitsLooked.Store(&fn)
	return func() { waitsLooked.Store(nil) }
}

// LearnLiveTimeouts has h read the timeouts of the live session nodes
// kept where its own is, as its look at a predecessor that did not vouch
// does.
func LearnLiveTimeouts(ctx context.Context, h *Handle) { h.learnLiveTimeouts(ctx) }

// SessionNodeName is the session node of session id in its group's office.
func SessionNodeName(id int64) string { return sessionNodeName(id) }

// WithdrawOwned deletes h's node as a waiter that gives up does (a
// deletion recorded nowhere but on its session node, if it keeps one),
// as if h had not yet learned that it owns.
func WithdrawOwned(ctx context.Context, h *Handle) error {
	return h.q.remove(ctx, h.t.name, ReasonCancelled)
}

// JudgeSessionNodeEvent has s judge, as a waiting session does, the event
// ev on the session node at node, seen while the queue node owner (a full
// path) was there, and reports whether s still trusts it to go only with
// its session. Give only events after which the node is gone: for one
// still there, the judgment goes on watching.
func JudgeSessionNodeEvent(s *Session, node, owner string, ev zk.EventType) bool {
	trust := &sessionTrust{}
	trust.ok.Store(true)
	trust.owner.Store(owner)
	ch := make(chan zk.Event, 1)
	ch <- zk.Event{Type: ev, Path: node}
	(&queue{s: s}).doubtSessionNode(node, ch, trust)
	return trust.ok.Load()
}

// CheckRootFor is CheckRoot for a session whose nodes take acl.
func CheckRootFor(ctx context.Context, s *Session, p string, acl []zk.ACL) error {
	return checkRoot(ctx, s.Conn(), p, acl)
}

// OnListingSaved has fn told of each listing a waiter next in line saved
// to keep its listing fresh, until the returned function restores it.
func OnListingSaved(fn func(children []string, next int32)) (restore func()) {
	listingSaved.Store(&fn)
	return func() { listingSaved.Store(nil) }
}

// CheckSessionRootFor has s check the session root as a queue whose nodes
// take acl does after its node's create: a warning, once per root.
func CheckSessionRootFor(ctx context.Context, s *Session, root string, acl []zk.ACL) {
	(&queue{s: s, o: recipeOptions{acl: acl}}).checkSessionRoot(ctx, root)
}

// CheckGroupFor has s check the group's ACL as a queue whose nodes take
// acl does after its node's create, at once rather than in the
// background: a warning, once per group.
func CheckGroupFor(ctx context.Context, s *Session, group string, acl []zk.ACL) {
	q := &queue{s: s, parent: group, o: recipeOptions{acl: acl}}
	if _, done := s.groupsChecked.LoadOrStore(group, struct{}{}); !done {
		q.checkGroupACL(ctx)
	}
}

// AncestorCount is the child version of the ancestor that sv counted its
// missing parent's making at (see parentMadeOnce), and whether it was read.
func AncestorCount(sv SingleView) (int32, bool) { return sv.gpCv, sv.gpKnown }
