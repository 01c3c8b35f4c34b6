package jetstream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	hjs "github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/sinktest"
)

// TestClusterNodeKilled: three nats-server processes, an R3 stream; while
// events are written, the node leading the stream is killed with SIGKILL
// (no hand-over of what it leads) and restarted on its store. Writes that
// fail meanwhile are retried, as the bridge's pipeline retries them; the
// stream ends with every event once, and a follower on all three URLs
// receives them all.
func TestClusterNodeKilled(t *testing.T) {
	c := natsserver.StartProcessCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s := connectSink(t, hjs.Config{Conn: fast(c.URL()), Replicas: 3, AckTimeout: 10 * time.Second})
	js := client(t, c.URL())
	checkReplicas(t, ctx, js, 3, hjs.DefaultStream)

	const groups, step = 4, 150
	prefix := uniq(t)[1:]
	pool := sinktest.Events(prefix, groups, 3000)
	follower := followOrdered(t, ctx, js, "/"+prefix)

	w := &clusterWriter{s: s}
	done := make(chan struct{})
	go func() { defer close(done); w.run(ctx, pool, groups) }()
	wait := func(what string, n int64) {
		t.Helper()
		at := w.written.Load() + n
		waitUntil(t, ctx, fmt.Sprintf("%d more events written %s", n, what), func() bool { return w.written.Load() >= at })
	}
	wait("before the kill", step)
	info, err := js.Stream(ctx, hjs.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	leader := c.Index(info.CachedInfo().Cluster.Leader)
	if leader < 0 {
		t.Fatalf("stream leader %q is none of the nodes", info.CachedInfo().Cluster.Leader)
	}
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	killedAt := w.written.Load()
	wait("with the stream's leader killed", step)
	if err := c.Restart(leader); err != nil {
		t.Fatal(err)
	}
	wait("after the restart", step)
	w.stop.Store(true)
	<-done
	written := pool[:w.written.Load()]

	got := follower.wait(t, ctx, len(written))
	missing, dups := compareIDs(written, got)
	stored := storedIDs(t, ctx, c.URL(), prefix, len(written))
	smissing, sdups := compareIDs(written, stored)
	t.Logf("%d events written; node %d (leading the stream) killed at event %d and restarted; %d writes failed and were retried (last: %v); stream: %d missing, %d twice; follower: %d missing, %d twice",
		len(written), leader, killedAt, w.failures.Load(), w.lastErr(), smissing, sdups, missing, dups)
	if smissing != 0 || sdups != 0 || missing != 0 || dups != 0 {
		t.Errorf("after a SIGKILL of the stream's leader: stream %d missing, %d twice; follower %d missing, %d twice", smissing, sdups, missing, dups)
	}
	inGroupOrder(t, "follower", got)
}

// storedIDs reads the stream's events of prefix from the start, raw.
func storedIDs(t *testing.T, ctx context.Context, url, prefix string, n int) []publish.Event {
	t.Helper()
	return followOrdered(t, ctx, client(t, url), "/"+prefix).wait(t, ctx, n)
}
