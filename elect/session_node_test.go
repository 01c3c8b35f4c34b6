package elect_test

import (
	"context"
	"errors"
	pathpkg "path"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// behindOwner makes first the owner of a new election on its own session
// (with firstOpts), and starts second campaigning behind it with opts. seen gets whether
// second's wait saw first's session node, once it looked (ProveSessionEnd
// only); owned gives second's handle once it owns.
func behindOwner(t *testing.T, firstOpts []elect.Option, opts ...elect.Option) (s1 *elect.Session, first *elect.Handle, seen <-chan bool, owned func() *elect.Handle) {
	t.Helper()
	addrs := sharedAddrs(t)
	g := groupPath(t)
	s1 = session(t, addrs)
	s2 := session(t, addrs)
	e1, err := elect.NewElection(s1, g, append([]elect.Option{elect.CreateParents()}, firstOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	first, err = e1.Campaign(ctxT(t, 10*time.Second), "first")
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
	e2, err := elect.NewElection(s2, g, opts...)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		h   *elect.Handle
		err error
	}
	res := make(chan result, 1)
	go func() {
		h, err := e2.Campaign(ctxT(t, 30*time.Second), "second")
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
			t.Fatal("the second candidate never came to own")
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
// lives does not, until that session ends; neither does the end of a
// session that kept no session node, or whose session node someone
// deleted while its owner's node was there, nor anything without the
// option.
func TestSessionEndProvesThePredecessorStopped(t *testing.T) {
	proof := []elect.Option{elect.ProveSessionEnd()}
	released := func(t *testing.T, h *elect.Handle, want bool) {
		t.Helper()
		got, err := h.PredecessorReleased(ctxT(t, 10*time.Second))
		if err != nil || got != want || h.PredecessorSessionEnded() != want {
			t.Fatalf("PredecessorReleased = %v, %v (session ended: %v); want %v", got, err, h.PredecessorSessionEnded(), want)
		}
	}
	t.Run("session ended", func(t *testing.T) {
		s1, first, seen, owned := behindOwner(t, proof, proof...)
		sawSessionNode(t, seen, true)
		node := pathpkg.Dir(first.NodePath()) + "/" + elect.OfficeNode + "/" + elect.SessionNodeName(s1.ID())
		if ok, st, err := s1.Conn().Exists(node); err != nil || !ok || st.EphemeralOwner != s1.ID() {
			t.Fatalf("the owner's session node %s: there %v, %v", node, ok, err)
		}
		_ = s1.Close()
		released(t, owned(), true)
	})
	t.Run("deleted by hand, then the session ended", func(t *testing.T) {
		s1, first, seen, owned := behindOwner(t, proof, proof...)
		sawSessionNode(t, seen, true)
		if err := session(t, sharedAddrs(t)).Conn().Delete(first.NodePath(), -1); err != nil {
			t.Fatal(err)
		}
		second := owned()
		got, ch, err := second.PredecessorReleasedW(ctxT(t, 10*time.Second))
		if err != nil || got || ch == nil {
			t.Fatalf("its session alive: PredecessorReleasedW = %v, watch %v, %v; want false with a watch", got, ch != nil, err)
		}
		_ = s1.Close()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("the session's end fired no watch")
		}
		released(t, second, true)
	})
	t.Run("session node deleted by hand first", func(t *testing.T) {
		// An office reset (deleteall) while the owner lives: the session
		// node's absence proves nothing from then on, not even after the
		// session ends.
		s1, first, seen, owned := behindOwner(t, proof, proof...)
		sawSessionNode(t, seen, true)
		c := session(t, sharedAddrs(t)).Conn()
		if err := c.Delete(pathpkg.Dir(first.NodePath())+"/"+elect.OfficeNode+"/"+elect.SessionNodeName(s1.ID()), -1); err != nil {
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
		s1, _, seen, owned := behindOwner(t, proof)
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
		s1, _, seen, owned := behindOwner(t, nil, proof...)
		sawSessionNode(t, seen, false)
		_ = s1.Close()
		released(t, owned(), false)
	})
}

// TestLocksKeepNoSessionNode: a lock's group holds no office, which
// go-zookeeper's Lock would fail on, so no session node either.
func TestLocksKeepNoSessionNode(t *testing.T) {
	s := session(t, sharedAddrs(t))
	g := groupPath(t)
	l, err := elect.NewLock(s, g, elect.CreateParents(), elect.ProveSessionEnd())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := s.Conn().Exists(g + "/" + elect.OfficeNode); err != nil || ok {
		t.Fatalf("the lock's group has an office: %v, %v", ok, err)
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

// TestSessionNodeRefusedStillJoins: an office that will not take our
// session node (its ACL refuses it, or someone made it an ephemeral node)
// costs only the proof: the candidate joins and leads without one.
func TestSessionNodeRefusedStillJoins(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags int32
		acl   []zk.ACL
	}{
		{"office read-only", 0, zk.WorldACL(zk.PermRead)},
		{"office ephemeral", zk.FlagEphemeral, zk.WorldACL(zk.PermAll)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs := sharedAddrs(t)
			g := groupPath(t)
			s, other := session(t, addrs), session(t, addrs)
			if _, err := other.Conn().Create(pathpkg.Dir(g), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatal(err)
			}
			if _, err := other.Conn().Create(g, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			if _, err := other.Conn().Create(g+"/"+elect.OfficeNode, nil, tc.flags, tc.acl); err != nil {
				t.Fatal(err)
			}
			e, err := elect.NewElection(s, g, elect.ProveSessionEnd())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Campaign(ctxT(t, 10*time.Second), "alone"); err != nil {
				t.Fatalf("joining beside an office that refuses our session node: %v", err)
			}
			if ok, _, err := s.Conn().Exists(g + "/" + elect.OfficeNode + "/" + elect.SessionNodeName(s.ID())); err != nil || ok {
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
