package elect_test

import (
	"context"
	"errors"
	pathpkg "path"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// sessionKind is a kind of participant the session-node tests run with:
// an election, which keeps its session nodes in its office, and a lock,
// which keeps them under the session root.
type sessionKind struct {
	name string
	// join joins g on s with opts as id, and returns once it owns.
	join func(ctx context.Context, s *elect.Session, g, id string, opts ...elect.Option) (*elect.Handle, error)
	// node is where s keeps its session node beside g.
	node func(g string, s *elect.Session) string
}

var sessionKinds = []sessionKind{
	{"election",
		func(ctx context.Context, s *elect.Session, g, id string, opts ...elect.Option) (*elect.Handle, error) {
			e, err := elect.NewElection(s, g, opts...)
			if err != nil {
				return nil, err
			}
			return e.Campaign(ctx, id)
		},
		func(g string, s *elect.Session) string {
			return g + "/" + elect.OfficeNode + "/" + elect.SessionNodeName(s.ID())
		}},
	{"lock",
		func(ctx context.Context, s *elect.Session, g, id string, opts ...elect.Option) (*elect.Handle, error) {
			l, err := elect.NewLock(s, g, append(opts, elect.WithID(id))...)
			if err != nil {
				return nil, err
			}
			return l.Acquire(ctx)
		},
		func(_ string, s *elect.Session) string {
			return elect.DefaultSessionRoot + "/" + elect.SessionNodeName(s.ID())
		}},
}

// behindOwner makes first the owner of a new group of kind k on its own
// session (with firstOpts), and starts second joining behind it with
// opts. seen gets whether second's wait saw first's session node, once it
// looked (ProveSessionEnd only); owned gives second's handle once it owns.
func behindOwner(t *testing.T, k sessionKind, firstOpts []elect.Option, opts ...elect.Option) (s1 *elect.Session, first *elect.Handle, seen <-chan bool, owned func() *elect.Handle) {
	t.Helper()
	addrs := sharedAddrs(t)
	g := groupPath(t)
	s1 = session(t, addrs)
	s2 := session(t, addrs)
	first, err := k.join(ctxT(t, 10*time.Second), s1, g, "first", append([]elect.Option{elect.CreateParents()}, firstOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	looks := make(chan bool, 1)
	t.Cleanup(elect.OnSessionLook(func(prev string, saw bool) {
		if prev == first.Node() {
			select {
			case looks <- saw:
			default:
			}
		}
	}))
	type result struct {
		h   *elect.Handle
		err error
	}
	res := make(chan result, 1)
	go func() {
		h, err := k.join(ctxT(t, 30*time.Second), s2, g, "second", opts...)
		res <- result{h, err}
	}()
	return s1, first, looks, func() *elect.Handle {
		t.Helper()
		select {
		case r := <-res:
			if r.err != nil {
				t.Fatal(r.err)
			}
			return r.h
		case <-time.After(30 * time.Second):
			t.Fatal("the second participant never came to own")
		}
		return nil
	}
}

// sawSessionNode waits for second's look at first's session node, and
// fails unless it saw one exactly when want says.
func sawSessionNode(t *testing.T, seen <-chan bool, want bool) {
	t.Helper()
	select {
	case got := <-seen:
		if got != want {
			t.Fatalf("the wait saw the owner's session node: %v, want %v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait never looked for the owner's session node")
	}
}

// TestSessionEndProvesThePredecessorStopped: under ProveSessionEnd, a
// node that went with its session (which a runner outlives by nothing:
// its work stops before its session can expire) counts as released, at
// once, where before the next runner waited for the longest a runner that
// cannot hear takes to stop. A node deleted by hand while its session
// lives does not, nor does its session node's going after that; neither
// does the end of a session that kept no session node, or whose session
// node someone deleted while its owner's node was there, nor anything
// without the option.
func TestSessionEndProvesThePredecessorStopped(t *testing.T) {
	for _, k := range sessionKinds {
		t.Run(k.name, func(t *testing.T) { sessionEndProves(t, k) })
	}
}

func sessionEndProves(t *testing.T, k sessionKind) {
	proof := []elect.Option{elect.ProveSessionEnd()}
	released := func(t *testing.T, h *elect.Handle, want bool) {
		t.Helper()
		got, err := h.PredecessorReleased(ctxT(t, 10*time.Second))
		if err != nil || got != want || h.PredecessorSessionEnded() != want {
			t.Fatalf("PredecessorReleased = %v, %v (session ended: %v); want %v", got, err, h.PredecessorSessionEnded(), want)
		}
	}
	t.Run("session ended", func(t *testing.T) {
		s1, first, seen, owned := behindOwner(t, k, proof, proof...)
		sawSessionNode(t, seen, true)
		node := k.node(first.Group(), s1)
		if ok, st, err := s1.Conn().Exists(node); err != nil || !ok || st.EphemeralOwner != s1.ID() {
			t.Fatalf("the owner's session node %s: there %v, %v", node, ok, err)
		}
		_ = s1.Close()
		released(t, owned(), true)
	})
	for _, then := range []string{"the session ended", "its session node deleted by hand"} {
		t.Run("deleted by hand, then "+then, func(t *testing.T) {
			// Once the owner's node went while its session node stayed,
			// someone deleted the node by hand, and may delete the
			// session node next while the owner, cut off, still runs:
			// its going then looks like the session's end. So it proves
			// nothing either way; the wait ends on the owner's record, or
			// at its bound.
			s1, first, seen, owned := behindOwner(t, k, proof, proof...)
			sawSessionNode(t, seen, true)
			c := session(t, sharedAddrs(t)).Conn()
			if err := c.Delete(first.NodePath(), -1); err != nil {
				t.Fatal(err)
			}
			second := owned()
			got, ch, err := second.PredecessorReleasedW(ctxT(t, 10*time.Second))
			if err != nil || got || ch == nil {
				t.Fatalf("its session alive: PredecessorReleasedW = %v, watch %v, %v; want false with a watch", got, ch != nil, err)
			}
			node := k.node(first.Group(), s1)
			if then == "the session ended" {
				_ = s1.Close()
			} else if err := c.Delete(node, -1); err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, "the session node gone", func() bool {
				ok, _, err := c.Exists(node)
				return err == nil && !ok
			})
			released(t, second, false)
		})
	}
	t.Run("session node deleted by hand first", func(t *testing.T) {
		// An office reset (deleteall) while the owner lives: the session
		// node's absence proves nothing from then on, not even after the
		// session ends.
		s1, first, seen, owned := behindOwner(t, k, proof, proof...)
		sawSessionNode(t, seen, true)
		c := session(t, sharedAddrs(t)).Conn()
		if err := c.Delete(k.node(first.Group(), s1), -1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // an operator's next command
		if err := c.Delete(first.NodePath(), -1); err != nil {
			t.Fatal(err)
		}
		second := owned()
		released(t, second, false)
		_ = s1.Close()
		released(t, second, false)
	})
	t.Run("without the option", func(t *testing.T) {
		s1, _, seen, owned := behindOwner(t, k, proof)
		_ = s1.Close()
		second := owned()
		select {
		case <-seen:
			t.Fatal("a wait without ProveSessionEnd looked for the owner's session node")
		default:
		}
		released(t, second, false)
	})
	t.Run("an owner that keeps none", func(t *testing.T) {
		s1, _, seen, owned := behindOwner(t, k, nil, proof...)
		sawSessionNode(t, seen, false)
		_ = s1.Close()
		released(t, owned(), false)
	})
}

// TestLockSessionNodeUnderTheRoot: a lock's group holds no office, which
// go-zookeeper's Lock would fail on; its session node goes under the
// session root instead, made when missing with CREATE for anyone (every
// identity in a group keeps its node there), one per session however many
// groups it joins. SessionNodesUnder moves the root, or with "" keeps none.
func TestLockSessionNodeUnderTheRoot(t *testing.T) {
	addrs := sharedAddrs(t)
	root := groupPath(t) + "-sessions"
	acquire := func(t *testing.T, s *elect.Session, opts ...elect.Option) *elect.Handle {
		t.Helper()
		return lockedIn(t, s, groupPath(t), append([]elect.Option{elect.CreateParents(), elect.ProveSessionEnd()}, opts...)...)
	}
	ownNode := func(t *testing.T, s *elect.Session, node string) {
		t.Helper()
		if ok, st, err := s.Conn().Exists(node); err != nil || !ok || st.EphemeralOwner != s.ID() {
			t.Fatalf("session node %s: there %v, %v", node, ok, err)
		}
	}
	t.Run("under the root", func(t *testing.T) {
		s := session(t, addrs)
		h := acquire(t, s, elect.SessionNodesUnder(root))
		if children, _, err := s.Conn().Children(h.Group()); err != nil || len(children) != 1 || children[0] != h.Node() {
			t.Fatalf("the lock's group holds %v (%v), want only its queue node", children, err)
		}
		ownNode(t, s, root+"/"+elect.SessionNodeName(s.ID()))
		acl, _, err := s.Conn().GetACL(root)
		if err != nil || !slices.ContainsFunc(acl, func(a zk.ACL) bool {
			return a.Scheme == "world" && a.ID == "anyone" && a.Perms&zk.PermCreate != 0
		}) {
			t.Fatalf("the root's ACL %v (%v) lets not everyone keep a session node there", acl, err)
		}
		// A second group on the same session: its node is the one.
		acquire(t, s, elect.SessionNodesUnder(root))
		ownNode(t, s, root+"/"+elect.SessionNodeName(s.ID()))
	})
	t.Run("default root", func(t *testing.T) {
		s := session(t, addrs)
		acquire(t, s)
		ownNode(t, s, elect.DefaultSessionRoot+"/"+elect.SessionNodeName(s.ID()))
	})
	t.Run("none", func(t *testing.T) {
		s := session(t, addrs)
		acquire(t, s, elect.SessionNodesUnder(""))
		if ok, _, err := s.Conn().Exists(elect.DefaultSessionRoot + "/" + elect.SessionNodeName(s.ID())); err != nil || ok {
			t.Fatalf("a session node was made without a root: %v, %v", ok, err)
		}
	})
}

// TestSessionRootOutsideTheGroup: a root in the group would put a child
// without a sequence there, which go-zookeeper's Lock fails on.
func TestSessionRootOutsideTheGroup(t *testing.T) {
	s := session(t, sharedAddrs(t))
	g := groupPath(t)
	for _, root := range []string{g, g + "/sessions", "/"} {
		if _, err := elect.NewLock(s, g, elect.SessionNodesUnder(root)); err == nil || !strings.Contains(err.Error(), "outside every group") {
			t.Errorf("session root %s for the group %s: %v, want refused", root, g, err)
		}
	}
	if _, err := elect.NewLock(s, g, elect.SessionNodesUnder("sessions")); err == nil || !strings.Contains(err.Error(), "session root") {
		t.Errorf("a relative session root: %v, want refused", err)
	}
}

// TestSessionProofRefusesLoseOnExpiry: under LoseOnExpiry an owner's work
// runs past its session's end, so its session node would prove a stop that
// has not happened.
func TestSessionProofRefusesLoseOnExpiry(t *testing.T) {
	s := session(t, sharedAddrs(t))
	_, err := elect.NewElection(s, groupPath(t), elect.ProveSessionEnd(), elect.WithLossPolicy(elect.LoseOnExpiry))
	if err == nil || !strings.Contains(err.Error(), "LoseOnExpiry") {
		t.Fatalf("ProveSessionEnd with LoseOnExpiry: %v, want refused", err)
	}
}

// TestSessionNodeRefusedStillJoins: an office or a session root that will
// not take our session node (its ACL refuses it, or someone made it an
// ephemeral node) costs only the proof: the candidate joins and leads, the
// lock's client takes the lock, without one.
func TestSessionNodeRefusedStillJoins(t *testing.T) {
	for _, tc := range []struct {
		name  string
		k     sessionKind
		flags int32
		acl   []zk.ACL
	}{
		{"office read-only", sessionKinds[0], 0, zk.WorldACL(zk.PermRead)},
		{"office ephemeral", sessionKinds[0], zk.FlagEphemeral, zk.WorldACL(zk.PermAll)},
		{"root read-only", sessionKinds[1], 0, zk.WorldACL(zk.PermRead)},
		{"root ephemeral", sessionKinds[1], zk.FlagEphemeral, zk.WorldACL(zk.PermAll)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs := sharedAddrs(t)
			g := groupPath(t)
			s, other := session(t, addrs), session(t, addrs)
			for _, p := range []string{pathpkg.Dir(g), g} {
				if _, err := other.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
					t.Fatal(err)
				}
			}
			root := g + "-sessions"
			side := map[string]string{"election": g + "/" + elect.OfficeNode, "lock": root}[tc.k.name]
			if _, err := other.Conn().Create(side, nil, tc.flags, tc.acl); err != nil {
				t.Fatal(err)
			}
			if _, err := tc.k.join(ctxT(t, 10*time.Second), s, g, "alone", elect.ProveSessionEnd(), elect.SessionNodesUnder(root)); err != nil {
				t.Fatalf("joining where the %s refuses our session node: %v", side, err)
			}
			if ok, _, err := s.Conn().Exists(side + "/" + elect.SessionNodeName(s.ID())); err != nil || ok {
				t.Errorf("a session node was made: %v, %v", ok, err)
			}
		})
	}
}

// TestOneWatchPerSessionNode: a session that waits again and again behind
// the same owner's session keeps one watch on that session node, not one
// more (and a goroutine to read it) for every wait: a standby behind a
// long-lived leader's session would otherwise gather them as leadership
// goes back and forth.
func TestOneWatchPerSessionNode(t *testing.T) {
	_, _, behind := ownerThenWaiter(t)
	round := func() {
		t.Helper()
		ctx := ctxT(t, 10*time.Second)
		h1, next := behind(ctx)
		if err := h1.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if h2 := <-next; h2 != nil {
			_ = h2.Resign(ctx)
		}
	}
	round()
	before := runtime.NumGoroutine()
	for range 20 {
		round()
	}
	if grew := runtime.NumGoroutine() - before; grew > 10 {
		t.Errorf("20 more waits behind the same session left %d more goroutines", grew)
	}
}

// ownerThenWaiter makes two candidates of a new election under
// ProveSessionEnd, on sessions s1 and s2; behind has the first lead and
// the second campaign behind it, and returns once the second looked at
// (and saw) the first's session node: the first's handle, and the
// second's once it leads.
func ownerThenWaiter(t *testing.T) (g string, s1 *elect.Session, behind func(context.Context) (*elect.Handle, <-chan *elect.Handle)) {
	t.Helper()
	addrs := sharedAddrs(t)
	g = groupPath(t)
	s1, s2 := session(t, addrs), session(t, addrs)
	e1, err := elect.NewElection(s1, g, elect.CreateParents(), elect.ProveSessionEnd())
	if err != nil {
		t.Fatal(err)
	}
	e2, err := elect.NewElection(s2, g, elect.ProveSessionEnd())
	if err != nil {
		t.Fatal(err)
	}
	looks := make(chan bool, 1)
	t.Cleanup(elect.OnSessionLook(func(_ string, saw bool) { looks <- saw }))
	return g, s1, func(ctx context.Context) (*elect.Handle, <-chan *elect.Handle) {
		t.Helper()
		h1, err := e1.Campaign(ctx, "first")
		if err != nil {
			t.Fatal(err)
		}
		next := make(chan *elect.Handle, 1)
		go func() {
			h, err := e2.Campaign(ctx, "second")
			if err != nil {
				t.Error(err)
			}
			next <- h
		}()
		sawSessionNode(t, looks, true)
		return h1, next
	}
}

// TestSessionNodeDeletedInALaterTenure: the watch a waiting session keeps
// on another session's node serves every later wait behind that session
// (TestOneWatchPerSessionNode); its deletion by hand must be told from the
// session's end by the owner node of the latest of them, not the first.
func TestSessionNodeDeletedInALaterTenure(t *testing.T) {
	g, s1, behind := ownerThenWaiter(t)
	other := session(t, sharedAddrs(t))
	ctx := ctxT(t, 20*time.Second)
	h1, next := behind(ctx)
	if err := h1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if h2 := <-next; h2 == nil || h2.Resign(ctx) != nil {
		t.Fatal("the second candidate's first tenure failed")
	}
	h1, next = behind(ctx)
	if err := other.Conn().Delete(g+"/"+elect.OfficeNode+"/"+elect.SessionNodeName(s1.ID()), -1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // an operator's next command
	if err := other.Conn().Delete(h1.NodePath(), -1); err != nil {
		t.Fatal(err)
	}
	h2 := <-next
	if h2 == nil {
		t.Fatal("the second candidate never led")
	}
	if got, err := h2.PredecessorReleased(ctx); err != nil || got {
		t.Errorf("PredecessorReleased = %v, %v; want false: the first's session lives, its node was deleted by hand", got, err)
	}
}

// TestSessionNodeNotedThenGone: a release that herald may record nowhere
// in the group notes itself on the owner's session node (a data change),
// and the runner's session closes moments later. A waiter that watched
// that node sees the data change and, looking again, finds the node gone:
// the session ended after the release, which proves its work stopped. It
// used to doubt any node gone unseen after a write, and the next herald
// lock waited its whole bound instead of starting as its predecessor
// exited. A session node written and then deleted by hand while the
// owner's node is still there is doubted as before.
func TestSessionNodeNotedThenGone(t *testing.T) {
	addrs := sharedAddrs(t)
	ctx := ctxT(t, 30*time.Second)
	for _, tc := range []struct {
		name   string
		byHand bool
		want   bool
	}{
		{"released, then the session closed", false, true},
		{"deleted by hand while the owner held", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := groupPath(t)
			owner, waiter := session(t, addrs), session(t, addrs)
			mkdirs(t, waiter.Conn(), path)
			if _, err := waiter.Conn().Set(path, []byte("kept by an operator"), -1); err != nil {
				t.Fatal(err)
			}
			l, err := elect.NewLock(owner, path, elect.ProveSessionEnd())
			if err != nil {
				t.Fatal(err)
			}
			h, err := l.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			node := elect.DefaultSessionRoot + "/" + elect.SessionNodeName(owner.ID())
			if tc.byHand {
				if err := waiter.Conn().Delete(node, -1); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := h.Release(ctx); err != nil {
					t.Fatal(err)
				}
				if b, _, err := waiter.Conn().Get(node); err != nil || !strings.Contains(string(b), h.Node()) {
					t.Fatalf("the session node holds %q (%v): want a note naming %s", b, err, h.Node())
				}
				if err := owner.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if got := elect.JudgeSessionNodeEvent(waiter, node, h.NodePath(), zk.EventNodeDataChanged); got != tc.want {
				t.Errorf("trusted after a data change and the node gone: %v, want %v", got, tc.want)
			}
		})
	}
}
