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
// (lock-0000000000: the sequence starts again at 0). Both tenures are in the
// stream: their events' ids differ by the owner's term, so JetStream does
// not drop the new tenure as a duplicate of the old one.
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
	acquired := func(min int) []publish.Event {
		var out []publish.Event
		for _, e := range storedEvents(t, js, root, min) {
			if e.Type == publish.LockAcquired && e.Owner != nil && e.Owner.Node == node {
				out = append(out, e)
			}
		}
		return out
	}
	waitFor(t, 15*time.Second, "the first tenure stored", func() bool { return len(acquired(1)) >= 1 })
	again := session(t, addrs)
	res, err := again.Conn().Multi(
		&zk.DeleteRequest{Path: p, Version: -1},
		&zk.DeleteRequest{Path: group, Version: -1},
		&zk.CreateRequest{Path: group, Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: group + "/lock-", Flags: zk.FlagEphemeral | zk.FlagSequence, Acl: zk.WorldACL(zk.PermAll)},
	)
	if err != nil || path.Base(res[3].String) != node {
		t.Fatalf("made again as %v (%v); the test needs the old name %s", res, err, node)
	}
	var got []publish.Event
	waitFor(t, 15*time.Second, "the second tenure stored", func() bool { got = acquired(2); return len(got) >= 2 })
	if got[0].Term == got[1].Term || got[0].ID == got[1].ID || got[1].Owner.Session != fmt.Sprintf("0x%x", uint64(again.Conn().SessionID())) {
		t.Fatalf("stored acquisitions %+v and %+v; want two tenures, the second of session 0x%x", got[0], got[1], again.Conn().SessionID())
	}
}
