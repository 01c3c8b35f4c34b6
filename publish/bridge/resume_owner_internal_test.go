package bridge

import (
	"context"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/elect/ident"
	"github.com/zkherald/herald/internal/heraldtest"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestRestartedOnAReportSeesARewriteNamingAnother: a bridge restarted on
// the report of a Kafka controller whose EPHEMERAL node was rewritten to
// name broker 3000 (a new owner to the bridge that saw it), after which
// the node was written again naming broker 1, publishes broker 1 as a new
// tenure from that write, as the bridge that saw it would have: the
// report's owner ID tells the rewrite from the reported owner's data set
// back. Without it broker 1 was published as the reported tenure's node,
// and the change of owner went unsaid.
func TestRestartedOnAReportSeesARewriteNamingAnother(t *testing.T) {
	addrs := zktest.Shared(t).Addrs()
	s, op, ctl := heraldtest.Session(t, addrs), heraldtest.Session(t, addrs), heraldtest.Session(t, addrs)
	root := "/t/" + strings.ReplaceAll(t.Name(), "/", "_") + fmt.Sprint(time.Now().UnixNano())
	ctrl := root + "/controller"
	data := func(broker int) []byte {
		return fmt.Appendf(nil, `{"version":2,"brokerid":%d,"timestamp":"1","kraftControllerEpoch":-1}`, broker)
	}
	for _, p := range []string{"/t", root} {
		if _, err := op.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
	}
	if _, err := ctl.Conn().Create(ctrl, data(1), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	reported, err := op.Conn().Set(ctrl, data(3000), -1)
	if err != nil {
		t.Fatal(err)
	}
	now, err := op.Conn().Set(ctrl, data(1), -1)
	if err != nil {
		t.Fatal(err)
	}
	node := func(term int64) string { return path.Base(ctrl) + "@" + fmt.Sprint(term) }
	b := &Bridge{resume: map[string]Resume{ctrl: {Owner: node(reported.Mzxid), OwnerID: "3000", Term: reported.Mzxid, Zxid: reported.Mzxid, Recipe: elect.RecipeElection}}}
	ctx, cancel := context.WithCancel(heraldtest.Ctx(t, 20*time.Second))
	defer cancel()
	o, err := elect.ObserveSingle(ctx, s, ctrl, elect.SingleNode{Format: ident.Kafka}, b.since(ctrl, nil)...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); o.Wait() }()
	select {
	case c := <-o.Changes():
		if c.Owner == nil || c.Owner.ID != "1" || c.Owner.Node != node(now.Mzxid) {
			t.Errorf("restarted on its report of 3000 as %s: %s owner %+v; want broker 1 as %s, the rewrite's tenure", node(reported.Mzxid), c.Kind, c.Owner, node(now.Mzxid))
		}
	case <-ctx.Done():
		t.Fatal("no change observed")
	}
}
