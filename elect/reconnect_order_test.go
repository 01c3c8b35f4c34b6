package elect_test

import (
	"cmp"
	"errors"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// A waiter cut off from ZooKeeper while its own node is deleted by hand and
// then the owner ahead of it releases must not own when it reconnects. On
// the new connection the client sets its watches again, and the server
// sends the deletions that happened meanwhile in the order of the client's
// list, which go-zookeeper builds from a map: the owner's deletion may come
// first, though it came second. The proxy makes that the order every time
// (lowest sequence first) and holds each event long enough for the waiter
// to act on the first before the second arrives. Meanwhile the waiter
// behind ours has rightly taken the lock.
func TestWaiterDoesNotOwnOnWatchesSetAgainOutOfOrder(t *testing.T) {
	addrs := sharedAddrs(t)
	ctx := ctxT(t, 60*time.Second)
	group := groupPath(t)
	look := session(t, addrs)
	al, _ := elect.NewLock(session(t, addrs), group, elect.CreateParents())
	a, err := al.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := proxyTo(t, addrs[0])
	wl, _ := elect.NewLock(session(t, []string{p.Addr()}, elect.WithSessionTimeout(10*time.Second)), group)
	type result struct {
		h   *elect.Handle
		err error
	}
	waited := make(chan result, 1)
	go func() { h, err := wl.Acquire(ctx); waited <- result{h, err} }()
	queued := func(n int) (last string) {
		eventually(t, 5*time.Second, "queued", func() bool {
			c, _, _ := look.Conn().Children(group)
			slices.SortFunc(c, func(x, y string) int { return cmpSeq(x, y) })
			if len(c) > 0 {
				last = c[len(c)-1]
			}
			return len(c) == n
		})
		return last
	}
	wNode := queued(2)
	cl, _ := elect.NewLock(session(t, addrs), group)
	behind := make(chan result, 1)
	go func() { h, err := cl.Acquire(ctx); behind <- result{h, err} }()
	queued(3)
	time.Sleep(500 * time.Millisecond) // our waiter's watches are set by now

	p.OrderSetWatches(func(paths []string) {
		slices.SortStableFunc(paths, func(x, y string) int { return cmpSeq(path.Base(x), path.Base(y)) })
	})
	p.SpaceEvents(500 * time.Millisecond)
	p.Refuse(true)
	p.Cut()
	if err := look.Conn().Delete(path.Join(group, wNode), -1); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c := <-behind
	if c.err != nil {
		t.Fatalf("the waiter behind ours: %v", c.err)
	}
	defer c.h.Release(ctx)
	p.Refuse(false)
	select {
	case r := <-waited:
		if r.err == nil {
			r.h.Release(ctx)
			t.Fatalf("our waiter owns with its node deleted while %s holds: it acted on the owner's deletion, set again out of order", c.h.Node())
		}
		if !errors.Is(r.err, elect.ErrNodeDeleted) {
			t.Fatalf("our waiter: %v, want ErrNodeDeleted", r.err)
		}
		if !c.h.Held() {
			t.Fatal("the waiter behind ours lost the lock meanwhile")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("our waiter neither owned nor failed after reconnecting")
	}
}

// cmpSeq orders node names by their sequence, names without one first.
func cmpSeq(x, y string) int {
	a, okA := elect.ParseSequence(x)
	b, okB := elect.ParseSequence(y)
	if c := cmp.Compare(btoi(okA), btoi(okB)); c != 0 || !okA {
		return c
	}
	return cmp.Compare(a, b)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
