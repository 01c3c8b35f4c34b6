package bridge

import (
	"fmt"
	"testing"

	"github.com/zkherald/herald/publish"
)

// TestWideScopeKeepsTheShard: a scope with more watched paths than a
// heartbeat names is widened to their parents' children, or past as many
// parents to their depth, and still covers every watched path of its
// shard and no group of another shard.
func TestWideScopeKeepsTheShard(t *testing.T) {
	for _, parents := range []int{1, maxScopeWatch + 1} {
		sc := &publish.Scope{ShardK: 1, ShardN: 3, Discover: []string{"/d"}}
		for i := range maxScopeWatch + 1 {
			sc.Watch = append(sc.Watch, fmt.Sprintf("/p%d/g%d", i%parents, i))
		}
		wide := wideScope(sc)
		if len(wide.Watch) != 0 || len(wide.Patterns) > maxScopeWatch {
			t.Fatalf("%d parents: %d watched paths and %d patterns, want none and at most %d", parents, len(wide.Watch), len(wide.Patterns), maxScopeWatch)
		}
		for _, g := range append(sc.Watch, "/d/x", "/d/x/deeper") {
			if got, want := wide.Covers(g), sc.Covers(g); got != want {
				t.Errorf("%d parents: Covers(%s) = %v, want %v", parents, g, got, want)
			}
		}
		for i := 0; ; i++ { // a sibling of the watched paths in another shard
			if g := fmt.Sprintf("/p0/other%d", i); publish.ShardOf(g, 3) != 1 {
				if wide.Covers(g) {
					t.Errorf("%d parents: covers %s, of another shard", parents, g)
				}
				break
			}
		}
	}
}
