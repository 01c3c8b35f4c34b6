package elect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestLastReleaseNotVouchedByAWithdrawal: `who` says since when a group has
// had no owner from the release on its mark, only while that release was
// the queue's last change. A waiter that gives up now writes the mark as
// it leaves (naming itself withdrawn), which makes the write the last
// change again: after an owner that went without a release (its node
// deleted by hand, its session ended) the release is then older than that
// owner, and must not be shown. It is shown when every node made after it
// withdrew.
func TestLastReleaseNotVouchedByAWithdrawal(t *testing.T) {
	addrs := sharedAddrs(t)
	c := session(t, addrs).Conn()
	for _, tc := range []struct {
		name      string
		withdrawn string
		shown     bool
	}{
		{"one node after the release never said it withdrew", "[2]", false},
		{"every node after the release withdrew", "[1,2]", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := groupPath(t)
			mkdirs(t, c, g)
			var names []string
			for range 3 {
				n, err := c.Create(g+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, n)
			}
			for _, n := range names {
				if err := c.Delete(n, -1); err != nil {
					t.Fatal(err)
				}
			}
			mark := fmt.Sprintf(`{"herald":1,"recipe":"lock","released":{"node":"lock-0000000000","id":"a","term":1,"reason":"released","time":%q},"withdrawn":%s}`,
				time.Now().UTC().Format(time.RFC3339Nano), tc.withdrawn)
			if _, err := c.Set(g, []byte(mark), -1); err != nil {
				t.Fatal(err)
			}
			v, err := elect.ReadGroup(ctxT(t, 10*time.Second), session(t, addrs), g)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.LastRelease != nil; got != tc.shown {
				t.Errorf("LastRelease %+v: shown %v, want %v", v.LastRelease, got, tc.shown)
			}
		})
	}
}

// TestSettleFinishesAGiveUpsNote: a waiter that gives up while cut off
// from the servers leaves its node and its note (see TestLockAfterAGiveUpStartsAtOnce)
// to the background. Settle, called before Close, lets that work finish
// once the connection is back; Close alone would end it where it stands,
// and the next copy would wait as for an owner deleted by hand.
func TestSettleFinishesAGiveUpsNote(t *testing.T) {
	w := waiterBehindAHolder(t)
	p, waiter, node := w.proxy, w.waits, w.node
	seq, _ := elect.ParseSequence(node)

	p.Refuse(true)
	p.Cut()
	eventually(t, 5*time.Second, "the waiter cut off", func() bool {
		st, _ := waiter.State()
		return st != elect.StateConnected
	})
	w.cancel()
	if err := <-w.done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter returned %v", err)
	}
	p.Refuse(false)
	if err := waiter.Settle(ctxT(t, 15*time.Second)); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	_ = waiter.Close()

	if ok, _, err := w.holder.Conn().Exists(w.path + "/" + node); err != nil || ok {
		t.Fatalf("the waiter's node %s is still there (%v) after Settle and Close", node, err)
	}
	b, _, err := w.holder.Conn().Get(w.path)
	if err != nil {
		t.Fatal(err)
	}
	var mark struct {
		Withdrawn []int32 `json:"withdrawn"`
	}
	if err := json.Unmarshal(b, &mark); err != nil {
		t.Fatalf("group node %q: %v", b, err)
	}
	if !slices.Contains(mark.Withdrawn, seq) {
		t.Fatalf("group node %s does not name the waiter's node %s (%d) withdrawn", b, node, seq)
	}
}
