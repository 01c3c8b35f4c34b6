package elect_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestObserverTellsAnUnrecordedEnd: an owner that keeps a session node
// (ProveSessionEnd, as herald run and herald lock do) and goes without a
// release recorded in the group is told by its session node, for an
// election (session node in its office) and a lock (under the default
// session root):
//   - its session ends (here closed; an expiry is the same transaction):
//     "session ended";
//   - someone deletes its node by hand while its session lives: "deleted";
//   - herald deletes it where neither the mark nor an office may take the
//     reason (a lock whose group node holds someone else's data; a waiter
//     that gives up; the watchdog's release of a dead runner's node): the
//     reason it noted on the session node.
//
// A session node deleted by hand first, and an owner that keeps none,
// leave the end "unknown": ZooKeeper does not say why the node went.
func TestObserverTellsAnUnrecordedEnd(t *testing.T) {
	const (
		closed    = "session closed"
		byHand    = "deleted by hand"
		first     = "session node deleted by hand, then the node"
		noRead    = "deleted by hand, its session node unreadable"
		release   = "released over someone else's data"
		withdraw  = "withdrawn"
		abandoned = "released by the watchdog over someone else's data"
		older     = "an older herald's session node, then the node deleted"
	)
	for _, tc := range []struct {
		lock  bool
		prove bool
		end   string
		want  elect.Reason
	}{
		{false, true, closed, elect.ReasonSessionEnded},
		{true, true, closed, elect.ReasonSessionEnded},
		{false, true, byHand, elect.ReasonDeleted},
		{true, true, byHand, elect.ReasonDeleted},
		{false, true, noRead, elect.ReasonDeleted},
		{true, true, noRead, elect.ReasonDeleted},
		{false, false, closed, elect.ReasonUnknown},
		{true, false, byHand, elect.ReasonUnknown},
		{false, true, first, elect.ReasonUnknown},
		{true, true, first, elect.ReasonUnknown},
		{true, true, release, elect.ReasonReleased},
		{true, false, release, elect.ReasonUnknown},
		{false, true, withdraw, elect.ReasonCancelled},
		{true, true, withdraw, elect.ReasonCancelled},
		{true, true, abandoned, elect.ReasonRunnerDied},
		{false, true, older, elect.ReasonUnknown},
		{true, true, older, elect.ReasonUnknown},
	} {
		kind, proof := "election", "session node"
		if tc.lock {
			kind = "lock"
		}
		if !tc.prove {
			proof = "no session node"
		}
		t.Run(fmt.Sprintf("%s, %s, %s", kind, proof, tc.end), func(t *testing.T) {
			addrs := sharedAddrs(t)
			path := groupPath(t)
			obs, owner := session(t, addrs), session(t, addrs)
			ctx := ctxT(t, 30*time.Second)
			if tc.end == release || tc.end == abandoned {
				// The group node holds another client's data: herald's
				// mark may not go there, and a lock keeps no office.
				mkdirs(t, obs.Conn(), path)
				if _, err := obs.Conn().Set(path, []byte("10.0.0.7"), -1); err != nil {
					t.Fatal(err)
				}
			}
			opts := []elect.Option{elect.CreateParents()}
			if tc.prove {
				opts = append(opts, elect.ProveSessionEnd())
			}
			var h *elect.Handle
			var err error
			if tc.lock {
				l, lerr := elect.NewLock(owner, path, opts...)
				if lerr != nil {
					t.Fatal(lerr)
				}
				h, err = l.Acquire(ctx)
			} else {
				e, eerr := elect.NewElection(owner, path, opts...)
				if eerr != nil {
					t.Fatal(eerr)
				}
				h, err = e.Campaign(ctx, "alpha")
			}
			if err != nil {
				t.Fatal(err)
			}
			o := observe(t, obs, path)
			expect(t, o, elect.Snapshot, func(c elect.Change) error {
				if c.Owner == nil || c.Owner.Node != h.Node() {
					return fmt.Errorf("owner %v, want %s", c.Owner, h.Node())
				}
				return nil
			})
			if err := endOwner(ctx, tc.end, tc.lock, path, obs, owner, h); err != nil {
				t.Fatal(err)
			}
			end := expect(t, o, elect.OwnerChanged, nil)
			if end.Owner != nil || end.Previous == nil || end.Previous.Node != h.Node() || end.Reason != tc.want {
				t.Fatalf("end %+v: want no owner, previous %s, reason %q", end, h.Node(), tc.want)
			}
		})
	}
}

// endOwner ends h's ownership of the group at path as end says.
func endOwner(ctx context.Context, end string, lock bool, path string, obs, owner *elect.Session, h *elect.Handle) error {
	switch end {
	case "session closed":
		return owner.Close()
	case "session node deleted by hand, then the node":
		if err := obs.Conn().Delete(sessionNodeOf(path, lock, owner), -1); err != nil {
			return fmt.Errorf("delete the session node: %w", err)
		}
		return obs.Conn().Delete(h.NodePath(), -1)
	case "deleted by hand, its session node unreadable":
		// Its stat tells all but a note, and needs no permission.
		noRead := zk.WorldACL(zk.PermAll &^ zk.PermRead)
		if _, err := obs.Conn().SetACL(sessionNodeOf(path, lock, owner), noRead, -1); err != nil {
			return fmt.Errorf("take READ from the session node: %w", err)
		}
		return obs.Conn().Delete(h.NodePath(), -1)
	case "deleted by hand":
		return obs.Conn().Delete(h.NodePath(), -1)
	case "an older herald's session node, then the node deleted":
		// An older herald made its session nodes without data and noted
		// none of its own deletions on them: its node gone, untouched
		// session node or not, may be its own doing.
		if _, err := obs.Conn().Set(sessionNodeOf(path, lock, owner), nil, -1); err != nil {
			return fmt.Errorf("empty the session node: %w", err)
		}
		return obs.Conn().Delete(h.NodePath(), -1)
	case "released over someone else's data":
		return h.Release(ctx)
	case "withdrawn":
		return elect.WithdrawOwned(ctx, h)
	case "released by the watchdog over someone else's data":
		rec := elect.Release{Node: h.Node(), ID: h.ID(), Term: h.Term(), Reason: elect.ReasonRunnerDied, Time: time.Now().UTC()}
		_, err := elect.ReleaseAbandoned(ctx, obs, h.NodePath(), rec, elect.RecipeLock)
		return err
	}
	return fmt.Errorf("no such end %q", end)
}

// sessionNodeOf is where owner keeps its session node for the group at
// path: the election's office, or the default session root for a lock.
func sessionNodeOf(path string, lock bool, owner *elect.Session) string {
	if lock {
		return elect.DefaultSessionRoot + "/" + elect.SessionNodeName(owner.ID())
	}
	return path + "/herald-office/" + elect.SessionNodeName(owner.ID())
}

// TestObserverTellsWhyAWaiterLeft: a waiter that keeps a session node and
// leaves the queue alone is told the same way as an owner: it gave up
// ("cancelled", noted on its session node as its node went), someone
// deleted its node ("deleted"), or its session ended ("session ended").
// candidate.left said "unknown" for all three.
func TestObserverTellsWhyAWaiterLeft(t *testing.T) {
	for _, tc := range []struct {
		end  string
		want elect.Reason
	}{
		{"gave up", elect.ReasonCancelled},
		{"deleted by hand", elect.ReasonDeleted},
		{"session closed", elect.ReasonSessionEnded},
	} {
		t.Run(tc.end, func(t *testing.T) {
			addrs := sharedAddrs(t)
			path := groupPath(t)
			obs, owner, waiter := session(t, addrs), session(t, addrs), session(t, addrs)
			ctx := ctxT(t, 30*time.Second)
			l, err := elect.NewLock(owner, path, elect.CreateParents(), elect.WithID("owner"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			queued := make(chan string, 1)
			w, err := elect.NewLock(waiter, path, elect.WithID("waiter"), elect.ProveSessionEnd(), elect.OnQueued(func(n string) { queued <- n }))
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() { _, err := w.Acquire(wctx); done <- err }()
			var node string
			select {
			case node = <-queued:
			case <-ctx.Done():
				t.Fatal("the waiter never queued")
			}
			o := observe(t, obs, path)
			expect(t, o, elect.Snapshot, func(c elect.Change) error {
				if c.Owner == nil || c.Owner.ID != "owner" || len(c.Queue) != 2 {
					return fmt.Errorf("want the owner and the waiter, got %+v", c.Queue)
				}
				return nil
			})
			switch tc.end {
			case "gave up":
				cancel()
				<-done
			case "deleted by hand":
				if err := obs.Conn().Delete(path+"/"+node, -1); err != nil {
					t.Fatal(err)
				}
			case "session closed":
				_ = waiter.Close()
			}
			left := expect(t, o, elect.Left, nil)
			if left.Candidate == nil || left.Candidate.Node != node || left.Reason != tc.want {
				t.Fatalf("left %+v: want %s, reason %q", left, node, tc.want)
			}
		})
	}
}
