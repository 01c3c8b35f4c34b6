package elect_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestLostCreateStillUncommittedIsFoundOnAnotherMember: our create reaches
// the leader, which cannot commit it yet (three of its four followers cut
// off, so one ack short of a quorum), and the connection is lost before
// the reply. The client reconnects to the follower still in touch, whose
// copy does not hold the node until the commit: a listing there, which is
// all the search for our node asked, said it was not there, so the create
// was made again, and once the cut ended both committed. The first node,
// ours but unknown to us, was the lowest: the lock waited behind it, and
// every other client behind both, for the session's life. The search now
// has the member catch up with the leader first (a sync, which the leader
// answers after the proposals before it).
func TestLostCreateStillUncommittedIsFoundOnAnotherMember(t *testing.T) {
	ctx := ctxT(t, 120*time.Second)
	zkc := zktest.ForTest(t, zkserver.Config{Nodes: 5, Isolatable: true, TickTime: 400 * time.Millisecond, JVMHeap: "128m"})
	followers, err := zkc.Followers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leader, err := zkc.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	path := groupPath(t)
	direct := session(t, []string{leader.Addr()})
	warm, _ := elect.NewLock(direct, path, elect.CreateParents())
	wh, err := warm.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = wh.Release(ctx)

	toLeader, toOther := proxyTo(t, leader.Addr()), proxyTo(t, zkc.Member(followers[3]).Addr())
	toOther.Refuse(true) // the session starts on the leader
	s := session(t, []string{toLeader.Addr(), toOther.Addr()}, elect.WithSessionTimeout(20*time.Second))
	cut := followers[:3]
	for _, f := range cut {
		if err := zkc.Isolate(f, true); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, f := range cut {
			_ = zkc.Isolate(f, false)
		}
	})
	forwarded := toLeader.HoldReplyTo(faultproxy.OpCreate, faultproxy.OpCreate2, faultproxy.OpMulti)
	l, _ := elect.NewLock(s, path)
	type result struct {
		h   *elect.Handle
		err error
	}
	got := make(chan result, 1)
	actx, cancel := context.WithTimeout(ctx, 12*time.Second)
	defer cancel()
	go func() {
		h, err := l.Acquire(actx)
		got <- result{h, err}
	}()
	select {
	case <-forwarded:
	case <-time.After(10 * time.Second):
		t.Fatal("the create never reached the leader")
	}
	toLeader.Refuse(true)
	toOther.Refuse(false)
	toLeader.Cut()
	// The search for our node asks the other member while the create is
	// still a proposal; then the cut ends, well before the leader, short of
	// a quorum for syncLimit (4 s), would give up.
	eventually(t, 3*time.Second, "the search for our node on the other member", func() bool {
		return toOther.Requests(faultproxy.OpSync, path) > 0 || toOther.Requests(faultproxy.OpGetChildren2, path) > 0
	})
	if children, _, err := direct.Conn().Children(path); err != nil || len(children) != 0 {
		t.Fatalf("the group on the leader holds %v (%v) before the cut ends; the create was to be still uncommitted", children, err)
	}
	if err := zkc.Isolate(cut[0], false); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		children, _, _ := direct.Conn().Children(path)
		t.Fatalf("acquire across a lost create still uncommitted: %v; the group holds %v", r.err, children)
	}
	defer r.h.Release(context.Background())
	onlyNode(t, direct, path, r.h, "after a lost create found on another member")
}
