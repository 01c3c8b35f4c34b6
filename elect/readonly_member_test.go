package elect_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestReadOnlyMemberServesHeraldNothing: a member cut off from the rest of
// an ensemble whose servers allow read-only mode turns read-only and
// serves reads from its own copy, as old as the cut, to clients that ask
// for that. herald never asks (go-zookeeper's handshake has no read-only
// flag, which such a server then refuses), so no session of herald's
// reaches it: neither a one-shot read such as herald who --zk's, which
// would present the owner at the cut as current, nor a lock. Should a
// client library that asks for read-only sessions come, this fails.
func TestReadOnlyMemberServesHeraldNothing(t *testing.T) {
	ctx := ctxT(t, 120*time.Second)
	zkc := zktest.ForTest(t, zkserver.Config{Nodes: 3, Isolatable: true, TickTime: 250 * time.Millisecond, JVMFlags: []string{"-Dreadonlymode.enabled=true"}})
	followers, err := zkc.Followers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cut, other := followers[0], followers[1]
	path := groupPath(t)
	l, _ := elect.NewLock(session(t, []string{zkc.Member(other).Addr()}), path, elect.CreateParents(), elect.WithID("before-the-cut"))
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the holder's node on the member to be cut", func() bool {
		v, err := elect.ReadGroup(ctx, session(t, []string{zkc.Member(cut).Addr()}), path)
		return err == nil && v.Owner != nil && v.Owner.Node == h.Node()
	})
	if err := zkc.Isolate(cut, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = zkc.Isolate(cut, false) })
	eventually(t, 30*time.Second, "the cut member read-only", func() bool {
		st, err := zkc.Member(cut).State(ctx)
		return err == nil && st == "read-only"
	})
	_ = h.Release(ctx) // the owner at the cut is gone
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := elect.NewSession(sctx, []string{zkc.Member(cut).Addr()}, elect.WithConnectTimeout(5*time.Second))
	if err == nil {
		defer s.Close()
		v, rerr := elect.ReadGroup(ctx, s, path)
		st, _ := s.State()
		t.Fatalf("a herald session on a read-only member (%v); its reading of the group: owner %+v (%v)", st, v.Owner, rerr)
	}
	t.Logf("no session on the read-only member: %v", err)
}
