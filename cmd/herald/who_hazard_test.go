package main

import (
	"encoding/json"
	"errors"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// herald who says when a group's clients misorder each other's nodes, so
// that two of them may each believe they own: here a Kazoo node behind a
// Curator mutex node, which Kazoo does not count.
func TestWhoSaysTwoOwnersPossible(t *testing.T) {
	srv := zktest.Shared(t)
	g := uniq(t)
	c, _, err := zk.Connect(srv.Addrs(), 5*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range []string{path.Dir(g), g} {
		if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	for _, base := range []string{"_c_5b3e1f4a-1c2d-4e5f-8a9b-0c1d2e3f4a5b-lock-", "9f8e7d6c5b4a39281706f5e4d3c2b1a0__lock__"} {
		if _, err := c.Create(g+"/"+base, []byte("x"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	zkf := []string{"--zk", srv.ConnectString()}
	out, stderr, code := heraldRun(t, nil, append(zkf, "who", g)...)
	if code != 0 || !strings.Contains(out, "two owners possible: Kazoo Lock or Election") || !strings.Contains(out, "groups of their own") {
		t.Errorf("who: exit %d; want the owner and a line saying two owners are possible:\n%s%s", code, out, stderr)
	}
	var kazooRow string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "__lock__") && !strings.HasPrefix(l, "two owners possible") {
			kazooRow = l
		}
	}
	if !strings.Contains(kazooRow, "may believe it owns") {
		t.Errorf("who: the Kazoo node's row %q does not say it may believe it owns", kazooRow)
	}
	out, stderr, code = heraldRun(t, nil, append(zkf, "who", "--json", g)...)
	var r whoReport
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || !strings.Contains(r.Hazard, "Kazoo") || len(r.Queue) != 2 || r.Queue[0].MayOwn || !r.Queue[1].MayOwn {
		t.Errorf("who --json: exit %d, hazard %q, queue %+v (%v); want the Kazoo node marked:\n%s%s", code, r.Hazard, r.Queue, err, out, stderr)
	}

	// A bridge publishes it with the group's events; who --nats says it
	// from there, without ZooKeeper.
	url := natsserver.Start(t).URL()
	br := start(t, nil, append(zkf, "bridge", "--watch", g, "--nats", url)...)
	if err := waitFor(20*time.Second, func() bool {
		out, _, _ = heraldRun(t, nil, "who", "--nats", url, g)
		return strings.Contains(out, "two owners possible: Kazoo Lock or Election")
	}); err != nil {
		t.Errorf("who --nats never said two owners are possible (%v):\n%s\nbridge:\n%s", err, out, br.out.String())
	}
}
