package bridge_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestDiscoverRootOfThousandsOfSequenceNamedChildren (found by an
// adversarial test): a discover root whose children are named like
// sequence nodes (a job run's, numbered) has each looked at, many at
// once, before it is taken as a group; the listing read the answers'
// map while those looks wrote it, and the runtime killed the bridge
// ("concurrent map read and map write").
func TestDiscoverRootOfThousandsOfSequenceNamedChildren(t *testing.T) {
	root, addrs, s := madeRoot(t)
	const n = 3000
	for i := 0; i < n; i += 100 {
		ops := make([]any, 0, 100)
		for j := range 100 {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/run-%010d", root, i+j), Acl: zk.WorldACL(zk.PermAll)})
		}
		if _, err := s.Conn().Multi(ops...); err != nil {
			t.Fatal(err)
		}
	}
	l := newLedger()
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, Sinks: []publish.Sink{l}})
	waitStatus(t, r.Bridge, 60*time.Second, "every child observed as a group", func(st bridge.Status) bool {
		return len(st.Groups) == n && st.Role == bridge.RoleActive
	})
}
