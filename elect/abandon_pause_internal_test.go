package elect

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/faultproxy"
)

// TestAbandonWhoseDeleteIsRefusedPauses: an abandoned node (see
// queue.abandon) whose delete the group's ACL refuses (no DELETE) fails
// the same way every time; without a pause between tries the clean-up
// sent a delete each round trip for the whole of its releaseWait. It
// pauses as the sweep does (TestSweepWhoseDeleteIsRefusedPauses).
func TestAbandonWhoseDeleteIsRefusedPauses(t *testing.T) {
	px, s := sweepSession(t)
	group := fmt.Sprintf("/abandon-undeletable-%d", time.Now().UnixNano())
	if _, err := s.Conn().Create(group, nil, 0, zk.WorldACL(zk.PermCreate|zk.PermRead|zk.PermAdmin)); err != nil {
		t.Fatal(err)
	}
	name := "lock-0000000001"
	node := group + "/" + name
	if _, err := s.Conn().Create(node, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = s.Conn().SetACL(group, zk.WorldACL(zk.PermAll), -1)
		_ = s.Conn().Delete(node, -1)
		_ = s.Conn().Delete(group, -1)
	})
	q, err := newQueue(s, group, RecipeLock, "lock-", nil)
	if err != nil {
		t.Fatal(err)
	}
	q.o.releaseWait = time.Second
	start := time.Now()
	q.abandon(name)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Settle(ctx); err != nil {
		t.Fatalf("the abandon did not end within its releaseWait: %v", err)
	}
	// At a pause of 50 ms a second holds some 20 tries; without one, a
	// try is a round trip, hundreds of them even on a loaded machine.
	n := px.Requests(faultproxy.OpDelete, node)
	if n == 0 || n > 40 {
		t.Errorf("an abandon whose delete the group's ACL refused for %v sent %d deletes; want some, at most 40", time.Since(start).Round(time.Millisecond), n)
	}
}
