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
	"github.com/zkherald/herald/internal/heraldtest"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestRestartedAfterAKRaftRewriteKeepsTheTenure: a bridge restarted on its
// report of a KRaft controller, after /controller was written again with
// the same bytes (no registration: /controller_epoch not written with it),
// published that write as a new tenure of the same controller, which the
// bridge that saw the write had kept as one.
func TestRestartedAfterAKRaftRewriteKeepsTheTenure(t *testing.T) {
	addrs := zktest.Shared(t).Addrs()
	s, op := heraldtest.Session(t, addrs), heraldtest.Session(t, addrs)
	root := "/t/" + strings.ReplaceAll(t.Name(), "/", "_") + fmt.Sprint(time.Now().UnixNano())
	ctrl, epoch := root+"/controller", root+"/controller_epoch"
	data := []byte(`{"version":2,"brokerid":3000,"timestamp":"1","kraftControllerEpoch":5}`)
	for _, p := range []string{"/t", root} {
		if _, err := op.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
	}
	// KRaft controller 3000 registers: the epoch and /controller in one
	// transaction; then an operator writes the same bytes again.
	if _, err := op.Conn().Multi(
		&zk.CreateRequest{Path: epoch, Data: []byte("5"), Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: ctrl, Data: data, Acl: zk.WorldACL(zk.PermAll)},
	); err != nil {
		t.Fatal(err)
	}
	_, reg, err := op.Conn().Get(ctrl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op.Conn().Set(ctrl, data, -1); err != nil {
		t.Fatal(err)
	}
	node := path.Base(ctrl) + "@" + fmt.Sprint(reg.Czxid)
	b := &Bridge{resume: map[string]Resume{ctrl: {Owner: node, OwnerID: "3000", Term: reg.Czxid, Zxid: reg.Czxid, Epoch: 5, Recipe: elect.RecipeElection}}}
	ctx, cancel := context.WithCancel(heraldtest.Ctx(t, 20*time.Second))
	defer cancel()
	o, err := elect.ObserveSingle(ctx, s, ctrl, elect.SingleNodeFor(ctrl), b.since(ctrl, nil)...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); o.Wait() }()
	select {
	case c := <-o.Changes():
		if c.Owner == nil || c.Owner.ID != "3000" || c.Owner.Node != node || c.Gap {
			t.Errorf("restarted on its report of 3000 as %s: %s owner %+v, gap %v; want the same tenure, no gap", node, c.Kind, c.Owner, c.Gap)
		}
	case <-ctx.Done():
		t.Fatal("no change observed")
	}
}
