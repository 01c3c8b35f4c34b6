package bridge_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestDiscoverRootMissingIsNotReady: a bridge whose --discover root does
// not exist (a typo, or not made yet) observes nothing and is not ready,
// saying so; once the root and a group below it appear it is ready, and
// when the root is deleted it is not ready again.
func TestDiscoverRootMissingIsNotReady(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, Sinks: []publish.Sink{jsSink(t, url)},
		Recipes: map[string]elect.Recipe{root: elect.RecipeElection}})
	missing := "discover root " + root + " does not exist"
	st := waitStatus(t, r.Bridge, 15*time.Second, "the missing root named", func(st bridge.Status) bool {
		return strings.Contains(strings.Join(st.NotReady(), "; "), missing)
	})
	if st.Role != bridge.RoleActive || len(st.Groups) != 0 {
		t.Errorf("status with the root missing: role %s, groups %v; want active, none", st.Role, st.Groups)
	}
	if why := strings.Join(st.NotReady(), "; "); strings.Contains(why, "not listed yet") {
		t.Errorf("not ready: %q; a missing root is not a root still being listed", why)
	}
	if code, body := get(t, r.Handler(), "/readyz"); code != 503 || !strings.Contains(body, missing) {
		t.Errorf("/readyz with the root missing: %d %s", code, body)
	}

	s := session(t, addrs)
	g := root + "/one"
	leads(t, candidate(t, s, g, "x")) // creates the root too
	waitStatus(t, r.Bridge, 15*time.Second, "ready once the root exists", func(st bridge.Status) bool {
		return len(st.NotReady()) == 0 && st.Groups[g] == bridge.GroupLive
	})

	deleteTree(t, s, root)
	waitStatus(t, r.Bridge, 15*time.Second, "not ready once the root is deleted", func(st bridge.Status) bool {
		return strings.Contains(strings.Join(st.NotReady(), "; "), missing)
	})
}
