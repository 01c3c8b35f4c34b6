package elect_test

import (
	"fmt"
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
