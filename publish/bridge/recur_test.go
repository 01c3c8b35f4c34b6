package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/jetstream"
)

// TestGroupMadeAgainKeepsBothTenures: a classic-recipe lock group is
// deleted and made again, and its new owner gets the old one's node name
// (lock-0000000000: the sequence starts again at 0), its new waiter the old
// waiter's. Both tenures and both waiters are in the stream: their events'
// ids differ by the owner's term and the group node's czxid, so JetStream
// drops neither as a duplicate of the old one.
func TestGroupMadeAgainKeepsBothTenures(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root := groupPath(t)
	group := root + "/lock"
	s := session(t, addrs)
	for _, p := range []string{path.Dir(root), root, group} {
		if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	first := session(t, addrs)
	p, err := first.Conn().Create(group+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	node := path.Base(p)
	w, err := first.Conn().Create(group+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	waiter := path.Base(w)
	start(t, bridge.Config{Servers: addrs, Discover: []string{root}, Source: "recur", Sinks: []publish.Sink{jsSink(t, url)}})
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := njs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the bridge's stream", func() bool {
		_, err := js.Stream(context.Background(), jetstream.DefaultStream)
		return err == nil
	})
	stored := func(min int) (acquired, joined []publish.Event) {
		for _, e := range storedEvents(t, js, root, min) {
			switch {
			case e.Type == publish.LockAcquired && e.Owner != nil && e.Owner.Node == node:
				acquired = append(acquired, e)
			case e.Type == publish.CandidateJoined && e.Candidate != nil && e.Candidate.Node == waiter:
				joined = append(joined, e)
			}
		}
		return acquired, joined
	}
	waitFor(t, 15*time.Second, "the first tenure and its waiter stored", func() bool {
		a, j := stored(2)
		return len(a) >= 1 && len(j) >= 1
	})
	again := session(t, addrs)
	res, err := again.Conn().Multi(
		&zk.DeleteRequest{Path: p, Version: -1},
		&zk.DeleteRequest{Path: w, Version: -1},
		&zk.DeleteRequest{Path: group, Version: -1},
		&zk.CreateRequest{Path: group, Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: group + "/lock-", Flags: zk.FlagEphemeral | zk.FlagSequence, Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: group + "/lock-", Flags: zk.FlagEphemeral | zk.FlagSequence, Acl: zk.WorldACL(zk.PermAll)},
	)
	if err != nil || path.Base(res[4].String) != node || path.Base(res[5].String) != waiter {
		t.Fatalf("made again as %v (%v); the test needs the old names %s and %s", res, err, node, waiter)
	}
	var got, joined []publish.Event
	waitFor(t, 15*time.Second, "the second tenure and its waiter stored", func() bool {
		got, joined = stored(4)
		return len(got) >= 2 && len(joined) >= 2
	})
	if got[0].Term == got[1].Term || got[0].ID == got[1].ID || got[1].Owner.Session != fmt.Sprintf("0x%x", uint64(again.Conn().SessionID())) {
		t.Fatalf("stored acquisitions %+v and %+v; want two tenures, the second of session 0x%x", got[0], got[1], again.Conn().SessionID())
	}
	if joined[0].ID == joined[1].ID {
		t.Fatalf("stored joins %+v and %+v share an id", joined[0], joined[1])
	}
}
