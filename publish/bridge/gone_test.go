package bridge_test

import (
	"errors"
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestDiscoveredGroupDeletedWithItsOwnerIsEnded: a discovered group
// deleted while it has an owner (its owner's node and the group node in
// one transaction, so that the root's listing and the group's own
// observer hear of it at once) must not leave that owner in the owners
// bucket, where the bridge's heartbeats would confirm it for good: the
// group is observed until its owner's end is published.
func TestDiscoveredGroupDeletedWithItsOwnerIsEnded(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	holder := session(t, addrs).Conn()
	const n = 12
	for _, p := range []string{path.Dir(root), root} {
		if _, err := holder.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	var groups []string
	for i := range n {
		g := fmt.Sprintf("%s/g%02d", root, i)
		if _, err := holder.Create(g, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if _, err := holder.Create(g+"/lock-", []byte("holder"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		groups = append(groups, g)
	}
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, Sinks: []publish.Sink{jsSink(t, url)}})
	waitStatus(t, r.Bridge, 20*time.Second, "every group live", func(st bridge.Status) bool { return len(st.NotReady()) == 0 && len(st.Groups) == n })
	waitFor(t, 20*time.Second, "every owner in the bucket", func() bool {
		for _, g := range groups {
			if natsOwner(t, url, g) == "" {
				return false
			}
		}
		return true
	})
	for _, g := range groups {
		if _, err := holder.Multi(&zk.DeleteRequest{Path: g + "/lock-0000000000", Version: -1}, &zk.DeleteRequest{Path: g, Version: -1}); err != nil {
			t.Fatalf("delete %s with its owner: %v", g, err)
		}
	}
	waitStatus(t, r.Bridge, 20*time.Second, "every group dropped", func(st bridge.Status) bool { return len(st.Groups) == 0 })
	waitFor(t, 20*time.Second, "no owner left in the bucket", func() bool {
		for _, g := range groups {
			if o := natsOwner(t, url, g); o != "" {
				t.Logf("%s still names %s", g, o)
				return false
			}
		}
		return true
	})
}
