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
	"github.com/zkherald/herald/sinks/jetstream"
)

// TestTwoOwnersPossibleIsReported: a lock group where a Kazoo node queues
// behind a Curator mutex node, which Kazoo does not count (so both clients
// own), is flagged while the mix lasts: per-group and aggregate metrics,
// the live page's state with the reason, and the hazard on the events
// published meanwhile. The flag clears when the mix ends.
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
	sub := collect(t, url, "herald.*."+publish.MustTokens(g))
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
	w, _ := ownerWatch(t, url, g)
	until(t, w, 10*time.Second, "the Curator owner in the owners bucket, no hazard", func(u jetstream.OwnerUpdate) bool {
		return u.Owner != nil && u.Owner.Hazard == ""
	})
	kz := mk("9f8e7d6c5b4a39281706f5e4d3c2b1a0__lock__")
	waitMetric(series, 1)
	waitMetric("herald_groups_two_owners_possible", 1)
	// The event of the node that brought the hazard carries it.
	sub.waitCount(t, 10*time.Second, "the Kazoo node's candidate.joined, with the hazard", 1, func(e publish.Event) bool {
		return e.Type == publish.CandidateJoined && e.Candidate != nil && g+"/"+e.Candidate.Node == kz && strings.Contains(e.Hazard, "Kazoo")
	})
	for _, e := range sub.all() {
		if e.Snapshot && e.Hazard != "" {
			t.Errorf("the snapshot, before the Kazoo node, carries a hazard: %+v", e)
		}
	}
	// The owners bucket says it beside the owner, who has not changed.
	until(t, w, 10*time.Second, "the owners bucket's value with the hazard", func(u jetstream.OwnerUpdate) bool {
		return u.Owner != nil && strings.Contains(u.Owner.Hazard, "Kazoo") && strings.Contains(u.Owner.Owner.Node, "-lock-")
	})
	_, page := get(t, r.Handler(), "/?q="+g)
	if !strings.Contains(page, "state-unsafe") || !strings.Contains(page, "two owners possible: Kazoo Lock or Election") {
		t.Errorf("the live page does not show the group unsafe, with the reason:\n%s", page)
	}
	if err := c.Delete(kz, -1); err != nil {
		t.Fatal(err)
	}
	waitMetric(series, 0)
	waitMetric("herald_groups_two_owners_possible", 0)
	sub.waitCount(t, 10*time.Second, "the Kazoo node's candidate.left, without a hazard", 1, func(e publish.Event) bool {
		return e.Type == publish.CandidateLeft && e.Candidate != nil && g+"/"+e.Candidate.Node == kz && e.Hazard == ""
	})
	until(t, w, 10*time.Second, "the owners bucket's value without the hazard", func(u jetstream.OwnerUpdate) bool {
		return u.Owner != nil && u.Owner.Hazard == ""
	})
}
