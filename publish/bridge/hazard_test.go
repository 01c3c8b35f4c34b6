package bridge_test

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestTwoOwnersPossibleIsReported: a lock group where a Kazoo node queues
// behind a Curator mutex node, which Kazoo does not count (so both clients
// own), is flagged while the mix lasts: per-group and aggregate metrics,
// and the live page's state with the reason. The flag clears when the mix
// ends.
func TestTwoOwnersPossibleIsReported(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	s := session(t, addrs)
	g := groupPath(t)
	c := s.Conn()
	for _, p := range []string{path.Dir(g), g} {
		if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	mk := func(base string) string {
		p, err := c.Create(g+"/"+base, []byte("x"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk("_c_5b3e1f4a-1c2d-4e5f-8a9b-0c1d2e3f4a5b-lock-")
	r := start(t, bridge.Config{Servers: addrs, Watch: []string{g}, Sinks: []publish.Sink{jsSink(t, url)}})
	series := `herald_group_two_owners_possible{group="` + g + `"}`
	waitMetric := func(name string, want float64) {
		t.Helper()
		waitFor(t, 10*time.Second, fmt.Sprintf("%s = %v", name, want), func() bool {
			v, found := metricValue(t, r.Handler(), name)
			return found && v == want
		})
	}
	waitMetric(series, 0)
	kz := mk("9f8e7d6c5b4a39281706f5e4d3c2b1a0__lock__")
	waitMetric(series, 1)
	waitMetric("herald_groups_two_owners_possible", 1)
	_, page := get(t, r.Handler(), "/?q="+g)
	if !strings.Contains(page, "state-unsafe") || !strings.Contains(page, "two owners possible: Kazoo Lock or Election") {
		t.Errorf("the live page does not show the group unsafe, with the reason:\n%s", page)
	}
	if err := c.Delete(kz, -1); err != nil {
		t.Fatal(err)
	}
	waitMetric(series, 0)
	waitMetric("herald_groups_two_owners_possible", 0)
}
