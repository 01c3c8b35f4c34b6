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
	if _, err := s.Conn().Create(kraft+"/controller", data("3000", "5"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Conn().Create(zkMode+"/controller", data("1", "-1"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
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
}
