package elect

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestSweepOfAGroupGoneListsOnce: a sweep for a create given up (see
// queue.sweep) whose group is gone, deleted whole with any node of ours
// in it (a container group the server removed once empty, an operator),
// has nothing left to look for. It listed again at once on every
// ErrNoNode, a sync and a listing each round trip, for the whole of
// releaseWait (10 s): thousands of requests to the ensemble for nothing.
func TestSweepOfAGroupGoneListsOnce(t *testing.T) {
	zks := zktest.Shared(t)
	px, err := faultproxy.New(zks.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := NewSession(ctx, []string{px.Addr()}, WithSessionTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	group := fmt.Sprintf("/t/%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), time.Now().UnixNano())
	q, err := newQueue(s, group, RecipeLock, "lock-", nil)
	if err != nil {
		t.Fatal(err)
	}
	q.sweep("no-such-marker") // the group was never made: gone, as deleted
	if n := px.Requests(faultproxy.OpGetChildren2, group); n > 3 {
		t.Errorf("a sweep of a group that is not there listed it %d times", n)
	}
}
