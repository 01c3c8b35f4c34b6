package bridge_test

import (
	"errors"
	"html"
	"io"
	"net/http"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/jetstream"
)

// TestLivePageNotesAKRaftController: a persistent /controller, written by
// a KRaft controller during a migration, is taken for the leader, but it
// may name a past controller (nobody rewrites it once the migration is
// finalized). `herald who` said so; the live page showed it as any leader
// held. It now carries the same note; a ZooKeeper-mode controller (an
// ephemeral node) does not.
func TestLivePageNotesAKRaftController(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	s := session(t, addrs)
	kraft, zkMode := groupPath(t), groupPath(t)
	for _, p := range []string{path.Dir(kraft), kraft, zkMode} {
		if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	data := func(broker, kraftEpoch string) []byte {
		return []byte(`{"version":2,"brokerid":` + broker + `,"timestamp":"1","kraftControllerEpoch":` + kraftEpoch + `}`)
	}
	// Each with its /controller_epoch, written in the same transaction,
	// as Kafka does in either mode.
	for _, c := range []struct {
		root  string
		data  []byte
		flags int32
	}{{kraft, data("3000", "5"), 0}, {zkMode, data("1", "-1"), zk.FlagEphemeral}} {
		if _, err := s.Conn().Multi(
			&zk.CreateRequest{Path: c.root + "/controller_epoch", Data: []byte("1"), Acl: zk.WorldACL(zk.PermAll)},
			&zk.CreateRequest{Path: c.root + "/controller", Data: c.data, Acl: zk.WorldACL(zk.PermAll), Flags: c.flags},
		); err != nil {
			t.Fatal(err)
		}
	}
	r := start(t, bridge.Config{Servers: addrs, HTTPAddr: "127.0.0.1:0", Source: "page-kraft", Sinks: []publish.Sink{jsSink(t, url)},
		Leaders: map[string]elect.SingleNode{
			kraft + "/controller":  elect.SingleNodeFor(kraft + "/controller"),
			zkMode + "/controller": elect.SingleNodeFor(zkMode + "/controller"),
		}})
	waitStatus(t, r.Bridge, 15*time.Second, "ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 && len(st.Groups) == 2 })
	var page string
	waitFor(t, 10*time.Second, "both controllers on the page", func() bool {
		resp, err := http.Get("http://" + r.HTTPAddr() + "/")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		page = html.UnescapeString(string(b))
		return strings.Contains(page, "3000") && strings.Contains(page, `data-group="`+zkMode+`/controller"`)
	})
	row := func(g string) string {
		i := strings.Index(page, `data-group="`+g+`"`)
		if i < 0 {
			t.Fatalf("no row for %s on the page:\n%s", g, page)
		}
		end := strings.Index(page[i:], "</tr>")
		return page[i : i+end]
	}
	if kr := row(kraft + "/controller"); !strings.Contains(kr, "may name a past controller") {
		t.Errorf("the KRaft controller's row lacks the note:\n%s", kr)
	}
	if zr := row(zkMode + "/controller"); strings.Contains(zr, "may name a past controller") {
		t.Errorf("the ZooKeeper-mode controller's row carries the KRaft note:\n%s", zr)
	}
	// The events and the owners bucket say it too, where they said
	// nothing: a consumer (who --nats, tail) saw the controller as any
	// leader.
	for _, c := range []struct {
		group, note string
	}{{kraft + "/controller", elect.KRaftNote}, {zkMode + "/controller", ""}} {
		events := streamEvents(t, url, c.group)
		events.c.waitCount(t, 15*time.Second, "the controller elected", 1, func(e publish.Event) bool { return e.Type == publish.LeaderElected })
		for _, e := range events.all() {
			if e.Type == publish.LeaderElected && e.Note != c.note {
				t.Errorf("%s: event %s carries note %q, want %q", c.group, e.Type, e.Note, c.note)
			}
		}
		w, _ := ownerWatch(t, url, c.group)
		u := until(t, w, 15*time.Second, "the controller in the owners bucket", func(u jetstream.OwnerUpdate) bool { return u.Owner != nil })
		if u.Owner.Note != c.note {
			t.Errorf("%s: the owners bucket's value carries note %q, want %q", c.group, u.Owner.Note, c.note)
		}
	}
}
