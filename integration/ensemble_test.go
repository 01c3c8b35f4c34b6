package integration_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestEnsembleFailover runs a herald election with three candidates, each
// connected to one member of a 3-node ensemble. It kills the member the
// leading candidate talks to, then the ensemble's leader, restarting each
// after the election settles. At no sampled instant may two handles report
// Held while both their nodes exist, and leadership must end with exactly
// one live candidate, the one ZooKeeper says owns the group.
func TestEnsembleFailover(t *testing.T) {
	zkc := zktest.ForTest(t, zkserver.Config{Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	group := groupPath(t, "election")
	checker := session(t, zkc.Addrs())
	var cs []*contender
	for i, addr := range zkc.Addrs() {
		cs = append(cs, &contender{id: fmt.Sprintf("c%d", i+1), servers: []string{addr}, timeout: 2 * time.Second})
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var x exclusion
	wg.Add(1 + len(cs))
	go func() { defer wg.Done(); x.watch(runCtx, checker, cs) }()
	for _, c := range cs {
		go func() { defer wg.Done(); c.run(runCtx, group) }()
	}
	defer func() { stop(); wg.Wait() }()

	// settled waits until exactly one candidate holds, ZooKeeper agrees, and
	// want candidates are queued; it returns the holder's index.
	settled := func(what string, want int) int {
		t.Helper()
		var idx int
		eventually(t, 30*time.Second, what, func() bool {
			idx = -1
			for i, c := range cs {
				if c.current() != nil {
					if idx >= 0 {
						return false
					}
					idx = i
				}
			}
			if idx < 0 {
				return false
			}
			rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
			defer rcancel()
			v, err := elect.ReadGroup(rctx, checker, group)
			h := cs[idx].current()
			return err == nil && h != nil && v.Owner != nil && v.Owner.Node == h.Node() && v.Owner.ID == cs[idx].id && len(v.Queue) == want
		})
		return idx
	}

	first := settled("a leader among three candidates", 3)
	member := zkc.Member(first)
	t.Logf("leader %s on zk%d; killing zk%d", cs[first].id, member.ID(), member.ID())
	if err := member.Kill(); err != nil {
		t.Fatal(err)
	}
	second := settled("a new leader after its member died", 2)
	if second == first {
		t.Fatalf("%s still leads with its member dead", cs[first].id)
	}
	if err := member.Start(ctx); err != nil {
		t.Fatal(err)
	}
	settled("the candidate of the restarted member back in line", 3)

	zl, err := zkc.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killing the ensemble leader zk%d", zl.ID())
	if err := zl.Kill(); err != nil {
		t.Fatal(err)
	}
	settled("one leader after the ensemble leader died", 2)
	if err := zl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	last := settled("every candidate back, exactly one leading", 3)

	violations, samples, maxHeld := x.report()
	t.Logf("final leader %s; %d samples, at most %d handles held at once", cs[last].id, samples, maxHeld)
	if len(violations) > 0 {
		t.Fatalf("two leaders at once:\n%v", violations)
	}
	if samples < 100 {
		t.Fatalf("only %d samples of the handles: the exclusion check did not run", samples)
	}

	// An owner's session, and its node, before the ensemble loses its
	// quorum for longer than the session's timeout.
	stop()
	wg.Wait()
	const lingerTimeout = 6 * time.Second
	lingerer := session(t, zkc.Addrs(), elect.WithSessionTimeout(lingerTimeout))
	node := group + "-lingerer"
	if _, err := lingerer.Conn().Create(node, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	// And one closed by a process about to exit once its loss is
	// presumed (herald run and lock do): Close ended the lingering
	// before the servers could be reached, so its node waited for the
	// servers' expiry all the same; CloseWithin gives it the time.
	closer := session(t, zkc.Addrs(), elect.WithSessionTimeout(lingerTimeout))
	closerNode := group + "-closer"
	if _, err := closer.Conn().Create(closerNode, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	// Two members down: the last one serves no session, and closes each
	// connection at the handshake. The error says a lost quorum may be
	// why; it used to suggest TLS alone.
	for _, m := range zkc.Members()[:2] {
		if err := m.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	survivor := zkc.Members()[2].Addr()
	cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
	defer ccancel()
	s, err := elect.NewSession(cctx, []string{survivor}, elect.WithConnectTimeout(3*time.Second))
	if err == nil {
		s.Close()
		t.Fatalf("a session through %s, the last member of three up", survivor)
	}
	if !strings.Contains(err.Error(), "lost its quorum") {
		t.Errorf("connecting to the last member up of three: %v; want it to say the ensemble may have lost its quorum", err)
	}

	// The session, unanswered for its whole timeout, is presumed lost;
	// the servers, without a quorum, expire nothing, and the leader of
	// the ensemble made again gives every session a whole timeout anew.
	// Its node (an owner's, whose work stopped with the loss) used to
	// hold the group for that timeout after the quorum was back, every
	// copy waiting behind it; the client now reaches the servers again
	// and closes the session, which deletes the node at once.
	eventually(t, 3*lingerTimeout, "the sessions presumed lost", func() bool {
		st, _ := lingerer.State()
		cst, _ := closer.State()
		return st == elect.StateLost && cst == elect.StateLost
	})
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		closer.CloseWithin(2 * lingerTimeout)
	}()
	time.Sleep(time.Second)
	for _, m := range zkc.Members()[:2] {
		if err := m.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := zkc.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	look := session(t, zkc.Addrs())
	gone := map[string]time.Duration{}
	eventually(t, 3*lingerTimeout, "the lost owners' nodes gone", func() bool {
		for _, n := range []string{node, closerNode} {
			if _, ok := gone[n]; !ok {
				if ok, _, err := look.Conn().Exists(n); err == nil && !ok {
					gone[n] = time.Since(back)
				}
			}
		}
		return len(gone) == 2
	})
	for _, n := range []string{node, closerNode} {
		if took := gone[n]; took > lingerTimeout*2/3 {
			t.Errorf("the node %s of a session presumed lost went %v after the quorum was back: as late as the servers' own expiry (%v), not closed by its client", n, took.Round(time.Millisecond), lingerTimeout)
		} else {
			t.Logf("the node %s of a session presumed lost went %v after the quorum was back", n, took.Round(time.Millisecond))
		}
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Errorf("CloseWithin did not return once the servers answered")
	}
	select {
	case <-lingerer.Lingering():
	case <-time.After(5 * time.Second):
		t.Errorf("the lost session's connection was not closed once the servers answered")
	}
}
