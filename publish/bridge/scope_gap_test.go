package bridge_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/audit"
)

// TestGroupOutOfScopeForAWhileMarksAGap: a bridge publishes a's tenure of
// a lock, then stops; it runs again under the same source, audit log and
// owners bucket, but watching another group only, while a releases and b
// takes the lock and releases it, and c takes it; then it runs again
// watching the lock. Its heartbeats never stopped, but none covered the
// lock meanwhile: the history of the audit log must show b's tenure, or
// mark a gap where it was (found by an adversarial test).
func TestGroupOutOfScopeForAWhileMarksAGap(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	g, other := groupPath(t), groupPath(t)+"-other"
	l, a, ctx := lockTaken(t, addrs, g)
	log := filepath.Join(t.TempDir(), "audit.log")
	cfg := func(watch string) bridge.Config {
		as, err := audit.New(log)
		if err != nil {
			t.Fatal(err)
		}
		return bridge.Config{Servers: addrs, Watch: []string{watch}, Source: "one", Sinks: []publish.Sink{jsSink(t, url), as},
			Lossless: []string{"audit"}, DrainTimeout: time.Second, Heartbeat: 200 * time.Millisecond}
	}
	r := start(t, cfg(g))
	waitFor(t, 15*time.Second, "a in the audit log", auditHas(log, func(e publish.Event) bool { return e.Owner != nil && e.Owner.Node == a.Node() }))
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	r = start(t, cfg(other))
	time.Sleep(time.Second) // heartbeats of the source, covering the other group only
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	start(t, cfg(g))
	waitFor(t, 15*time.Second, "c in the audit log", auditHas(log, func(e publish.Event) bool { return e.Owner != nil && e.Owner.Node == c.Node() }))
	requireTenureOrGap(t, log, b)
}
