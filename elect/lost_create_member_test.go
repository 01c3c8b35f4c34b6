package elect_test

import (
	"context"
	"fmt"
	"strings"
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
// answers after the proposals before it). With ProveSessionEnd, as herald
// run and herald lock use, the create is a transaction with the session's
// node, made again without it once that node was found.
func TestLostCreateStillUncommittedIsFoundOnAnotherMember(t *testing.T) {
	for name, opts := range map[string][]elect.Option{"plain": nil, "ProveSessionEnd": {elect.ProveSessionEnd()}} {
		t.Run(name, func(t *testing.T) { lostCreateFound(t, opts) })
	}
}

func lostCreateFound(t *testing.T, opts []elect.Option) {
	ctx := ctxT(t, 120*time.Second)
	lc := startLostCreate(t, ctx, opts...)
	type result struct {
		h   *elect.Handle
		err error
	}
	got := make(chan result, 1)
	actx, cancel := context.WithTimeout(ctx, 12*time.Second)
	defer cancel()
	go func() {
		h, err := lc.lock.Acquire(actx)
		got <- result{h, err}
	}()
	lc.loseTheReply(t)
	r := <-got
	if r.err != nil {
		children, _, _ := lc.direct.Conn().Children(lc.path)
		t.Fatalf("acquire across a lost create still uncommitted: %v; the group holds %v", r.err, children)
	}
	defer r.h.Release(context.Background())
	onlyNode(t, lc.direct, lc.path, r.h, "after a lost create found on another member")
}

// TestLostCreateGivenUpStillUncommittedLeavesNoNode: as above, but the
// caller gives up while the create is on its way, so herald sweeps the
// group for the node once reconnected. The sweep's listing, from the
// member's own copy, found nothing, and the node, committed after, stayed
// in the queue, held by a live session that did not know it: every later
// client waited behind it for that session's life.
func TestLostCreateGivenUpStillUncommittedLeavesNoNode(t *testing.T) {
	ctx := ctxT(t, 120*time.Second)
	lc := startLostCreate(t, ctx)
	actx, cancel := context.WithCancel(ctx)
	given := make(chan error, 1)
	go func() {
		_, err := lc.lock.Acquire(actx)
		given <- err
	}()
	lc.onForwarded = cancel
	lc.loseTheReply(t)
	if err := <-given; err == nil {
		t.Fatal("an acquire given up while its create was on its way owned")
	}
	// Once the create committed (the group's child version moved), the
	// node must go: held by our live session, a node the sweep missed
	// stays for that session's life.
	eventually(t, 10*time.Second, "the node committed and swept", func() bool {
		_, st, err := lc.direct.Conn().Exists(lc.path)
		return err == nil && st.Cversion > lc.cversion && st.NumChildren == 0
	})
}

// lostCreate is a 5-member ensemble with three followers cut off, so that
// the leader cannot commit, and a lock on a session connected to the
// leader through toLeader, which fails over to the fourth follower
// through toOther.
type lostCreate struct {
	zkc               *zkserver.Cluster
	cut               []int
	direct            *elect.Session
	path              string
	toLeader, toOther *faultproxy.Proxy
	lock              *elect.Lock
	onForwarded       func()
	other             int   // the member the session fails over to
	sid               int64 // the lock's session
	cversion          int32 // the group's child version before the create committed
}

func startLostCreate(t *testing.T, ctx context.Context, opts ...elect.Option) *lostCreate {
	t.Helper()
	zkc := zktest.ForTest(t, zkserver.Config{Nodes: 5, Isolatable: true, TickTime: 500 * time.Millisecond, SyncLimit: 20, JVMHeap: "128m"})
	followers, err := zkc.Followers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leader, err := zkc.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lc := &lostCreate{zkc: zkc, cut: followers[:3], path: groupPath(t), direct: session(t, []string{leader.Addr()})}
	warm, _ := elect.NewLock(lc.direct, lc.path, append([]elect.Option{elect.CreateParents()}, opts...)...) // what the create needs made first
	wh, err := warm.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = wh.Release(ctx)
	lc.toLeader, lc.toOther = proxyTo(t, leader.Addr()), proxyTo(t, zkc.Member(followers[3]).Addr())
	lc.toOther.Refuse(true) // the session starts on the leader
	s := session(t, []string{lc.toLeader.Addr(), lc.toOther.Addr()}, elect.WithSessionTimeout(20*time.Second))
	lc.lock, _ = elect.NewLock(s, lc.path, opts...)
	lc.other, lc.sid = followers[3], s.ID()
	for _, f := range lc.cut {
		if err := zkc.Isolate(f, true); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, f := range lc.cut {
			_ = zkc.Isolate(f, false)
		}
	})
	return lc
}

// loseTheReply waits for the lock's create to reach the leader, cuts the
// connection before the reply, has the session fail over to the other
// member, and ends the cut of one follower once herald asked that member
// about the group, while the create is still a proposal: well before the
// leader, short of a quorum for syncLimit (10 s: at 5 s, one run in 15
// lost the race on a machine loaded five times over), would give up.
func (lc *lostCreate) loseTheReply(t *testing.T) {
	t.Helper()
	forwarded := lc.toLeader.HoldReplyTo(faultproxy.OpCreate, faultproxy.OpCreate2, faultproxy.OpMulti)
	select {
	case <-forwarded:
	case <-time.After(10 * time.Second):
		t.Fatal("the create never reached the leader")
	}
	if lc.onForwarded != nil {
		lc.onForwarded()
	}
	lc.toLeader.Refuse(true)
	lc.toOther.Refuse(false)
	lc.toLeader.Cut()
	eventually(t, 3*time.Second, "herald asking the other member about the group", func() bool {
		return lc.toOther.Requests(faultproxy.OpSync, lc.path) > 0 || lc.toOther.Requests(faultproxy.OpGetChildren2, lc.path) > 0
	})
	if lc.toOther.Requests(faultproxy.OpSync, lc.path) == 0 {
		lc.listingAnswered(t)
	}
	children, st, err := lc.direct.Conn().Children(lc.path)
	if err != nil || len(children) != 0 {
		t.Fatalf("the group on the leader holds %v (%v) before the cut ends; the create was to be still uncommitted", children, err)
	}
	lc.cversion = st.Cversion
	if err := lc.zkc.Isolate(lc.cut[0], false); err != nil {
		t.Fatal(err)
	}
}

// listingAnswered waits, for up to two seconds, until the other member
// has answered every request of the session it got: a listing sent
// without a sync is then answered from the member's copy before the
// commit, which the end of the cut would otherwise race. A request of the
// session's held there (a create made again) has it wait the two seconds
// out, well inside the leader's syncLimit.
func (lc *lostCreate) listingAnswered(t *testing.T) {
	t.Helper()
	m := lc.zkc.Member(lc.other)
	sid := fmt.Sprintf("sid=0x%x,", uint64(lc.sid))
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		out, err := m.FourLetter(t.Context(), "cons")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, sid) && strings.Contains(line, "(queued=0,") {
				return
			}
		}
	}
}
