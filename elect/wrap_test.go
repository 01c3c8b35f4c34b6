package elect_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// curatorWrapped is a Curator mutex node's name as ZooKeeper makes it once
// the group's counter went past 2147483647: its sequence negative.
const curatorWrapped = "_c_5b3e1f4a-1c2d-4e5f-8a9b-0c1d2e3f4a5b-lock-" + "-000000005"

// A group whose counter went past 2147483647 names its nodes with negative
// numbers, which Curator, Kazoo and go-zookeeper do not order as they were
// made: beside such a client herald refuses to wait, and an owner steps
// down when one joins, saying to give the group a new path. A node named
// so that no session holds (made by hand) is no client: herald queues as
// usual. ZooKeeper's counter cannot be moved on in a test, so the foreign
// node is created under the name ZooKeeper would have given it.
func TestWrappedGroupWithAForeignClient(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	addrs := sharedAddrs(t)
	if seq, ok := elect.ParseSequence(curatorWrapped); !ok || seq != -5 {
		t.Fatalf("%s reads as sequence %d, %v; want -5", curatorWrapped, seq, ok)
	}
	wantWrap := func(t *testing.T, err error) {
		t.Helper()
		if !errors.Is(err, elect.ErrUnsafeGroup) || !strings.Contains(err.Error(), "went past 2147483647") || !strings.Contains(err.Error(), "new path") {
			t.Fatalf("got %v; want ErrUnsafeGroup saying the counter wrapped and to give the group a new path", err)
		}
	}
	t.Run("a waiter refuses", func(t *testing.T) {
		group := groupPath(t)
		c := session(t, addrs).Conn()
		makeGroup(t, c, group)
		if _, err := c.Create(group+"/"+curatorWrapped, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		l, _ := elect.NewLock(session(t, addrs), group)
		h, err := l.AcquireTimeout(ctx, 5*time.Second)
		if err == nil {
			h.Release(ctx)
		}
		wantWrap(t, err)
	})
	t.Run("a node no session holds is no client", func(t *testing.T) {
		group := groupPath(t)
		c := session(t, addrs).Conn()
		makeGroup(t, c, group)
		if _, err := c.Create(group+"/"+curatorWrapped, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		l, _ := elect.NewLock(session(t, addrs), group)
		// Not refused: our node waits behind it, as behind any node
		// below its own.
		h, err := l.AcquireTimeout(ctx, 1500*time.Millisecond)
		if err == nil {
			h.Release(ctx)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("beside a hand-made node: %v; want the wait to time out, not a refusal", err)
		}
	})
	t.Run("an owner steps down", func(t *testing.T) {
		group := groupPath(t)
		l, err := elect.NewLock(session(t, addrs), group, elect.CreateParents(), elect.WatchForHazards())
		if err != nil {
			t.Fatal(err)
		}
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Release(context.Background())
		if _, err := session(t, addrs).Conn().Create(group+"/"+curatorWrapped, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-h.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("the owner (%s) still holds 5s after %s joined", h.Node(), curatorWrapped)
		}
		if h.Reason() != elect.ReasonTwoOwners {
			t.Fatalf("stepped down with reason %q; want %q", h.Reason(), elect.ReasonTwoOwners)
		}
		wantWrap(t, h.Err())
	})
}
