package elect

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestSweepOfAGroupGoneListsOnce: a sweep for a create given up (see
// queue.sweep) whose group is gone, deleted whole with any node of ours
// in it (a container group the server removed once empty, an operator),
// has nothing left to look for. It listed again at once on every
// ErrNoNode, a sync and a listing each round trip, for the whole of
// releaseWait (10 s): thousands of requests to the ensemble for nothing.
func TestSweepOfAGroupGoneListsOnce(t *testing.T) {
	px, s := sweepSession(t)
	group := fmt.Sprintf("/t/%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), time.Now().UnixNano())
	q, err := newQueue(s, group, RecipeLock, "lock-", nil)
	if err != nil {
		t.Fatal(err)
	}
	q.sweep("no-such-marker") // the group was never made: gone, as deleted
	if n := px.Requests(faultproxy.OpGetChildren2, group); n > 3 {
		t.Errorf("a sweep of a group that is not there listed it %d times", n)
	}
}

// TestSweepRefusedByTheGroupsACLPauses: a sweep whose listing the group's
// ACL refuses (it gives us no READ) fails the same way every time; it
// listed again at once, thousands of times in its releaseWait. It now
// pauses between tries.
func TestSweepRefusedByTheGroupsACLPauses(t *testing.T) {
	px, s := sweepSession(t)
	group := fmt.Sprintf("/sweep-refused-%d", time.Now().UnixNano())
	if _, err := s.Conn().Create(group, nil, 0, zk.DigestACL(zk.PermAll, "someone-else", "pw")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Conn().Delete(group, -1) }) // the root lets us delete it
	q, err := newQueue(s, group, RecipeLock, "lock-", nil)
	if err != nil {
		t.Fatal(err)
	}
	q.o.releaseWait = time.Second
	q.sweep("no-such-marker")
	if n := px.Requests(faultproxy.OpGetChildren2, group); n == 0 || n > 40 {
		t.Errorf("a sweep refused by the group's ACL for 1 s listed it %d times; want some, at most 40", n)
	}
}

// TestSweepWhoseDeleteIsRefusedPauses: a sweep that lists the group but
// may not delete our node there (the group's ACL gives no DELETE) failed
// the same way every time too, and went round again at once, a sync, a
// listing and a delete each round trip until its deadline; only a failed
// listing paused. A failed give-up now pauses as well.
func TestSweepWhoseDeleteIsRefusedPauses(t *testing.T) {
	px, s := sweepSession(t)
	group := fmt.Sprintf("/sweep-undeletable-%d", time.Now().UnixNano())
	if _, err := s.Conn().Create(group, nil, 0, zk.WorldACL(zk.PermCreate|zk.PermRead|zk.PermAdmin)); err != nil {
		t.Fatal(err)
	}
	node := group + "/lock-marked-0000000001"
	if _, err := s.Conn().Create(node, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = s.Conn().SetACL(group, zk.WorldACL(zk.PermAll), -1)
		_ = s.Conn().Delete(node, -1)
		_ = s.Conn().Delete(group, -1)
	})
	q, err := newQueue(s, group, RecipeLock, "lock-", nil)
	if err != nil {
		t.Fatal(err)
	}
	q.o.releaseWait = time.Second
	q.sweep("marked")
	if n := px.Requests(faultproxy.OpGetChildren2, group); n == 0 || n > 40 {
		t.Errorf("a sweep whose delete the group's ACL refused for 1 s listed the group %d times; want some, at most 40", n)
	}
}

// sweepSession is a session on the shared server through a proxy that
// counts its requests, both closed when the test ends.
func sweepSession(t *testing.T) (*faultproxy.Proxy, *Session) {
	t.Helper()
	px, err := faultproxy.New(zktest.Shared(t).Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := NewSession(ctx, []string{px.Addr()}, WithSessionTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return px, s
}
