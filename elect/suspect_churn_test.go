package elect_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestSuspectBelowTheOwnerStaysSuspectThroughChurn: an ephemeral node made
// under a chosen name below the owner is suspect because it was not listed
// before; that is known only when it appears. A waiter that comes and goes
// between two listings (here in one multi) moves the child version more
// than the listings show, and the observer dropped every verdict then:
// judged again, the node was listed before, so no longer suspect, and was
// reported as the owner in place of the real one.
func TestSuspectBelowTheOwnerStaysSuspectThroughChurn(t *testing.T) {
	for _, many := range []bool{false, true} {
		t.Run(map[bool]string{false: "Observe", true: "ObserveMany"}[many], func(t *testing.T) {
			ctx := ctxT(t, 30*time.Second)
			addrs := sharedAddrs(t)
			a, third, watcher := session(t, addrs), session(t, addrs), session(t, addrs)
			group := groupPath(t)
			e, _ := elect.NewElection(a, group, elect.CreateParents())
			h, err := e.Campaign(ctx, "alpha")
			if err != nil {
				t.Fatal(err)
			}
			last := observeLast(t, watcher, group, many)
			eventually(t, 10*time.Second, "alpha owning", func() bool { v, ok := last(); return ok && v.Owner != nil && v.Owner.ID == "alpha" })
			below := "n_" + elect.FormatSequence(h.Sequence()-2)
			if h.Sequence() < 2 {
				below = "n_-000000002"
			}
			open := zk.WorldACL(zk.PermAll)
			if _, err := third.Conn().Create(group+"/"+below, nil, zk.FlagEphemeral, open); err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, "the node below the owner suspect", func() bool {
				v, ok := last()
				return ok && len(v.Queue) == 2 && strings.Contains(v.Queue[0].Suspect, "appeared below the owner")
			})
			churn := group + "/n_churn"
			if _, err := third.Conn().Multi(&zk.CreateRequest{Path: churn, Acl: open, Flags: zk.FlagEphemeral},
				&zk.DeleteRequest{Path: churn, Version: -1}); err != nil {
				t.Fatal(err)
			}
			// A waiter that stays, so that the view changes once the
			// observer has read past the churn.
			waiter, err := third.Conn().Create(group+"/n_", nil, zk.FlagEphemeral|zk.FlagSequence, open)
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, "the waiter listed", func() bool { v, ok := last(); return ok && len(v.Queue) == 3 })
			v, _ := last()
			if v.Owner == nil || v.Owner.ID != "alpha" || !strings.Contains(v.Queue[0].Suspect, "appeared below the owner") {
				t.Fatalf("after a waiter came and went, and %s joined: owner %+v, queue %+v; want alpha owning, %s still suspect", waiter, v.Owner, v.Queue, below)
			}
		})
	}
}
