package bridge_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/jetstream"
)

// TestAuditLogBehindTheSharedStoreMarksAGap: the audit log cannot be written
// (its directory replaced by a file) while a lock is released, taken by
// b and released again; the JetStream sink stores all of it. The bridge
// stops (or is killed) before the audit log is back, so the audit backlog
// is lost. Restarted with the audit log back, the bridge measures against
// the owners bucket (ahead), and the audit log's history has b's tenure
// missing with no gap mark.
func TestAuditLogBehindTheSharedStoreMarksAGap(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	g := groupPath(t)
	l, a, ctx := lockTaken(t, addrs, g)
	base := t.TempDir()
	dir := filepath.Join(base, "logs")
	log := filepath.Join(dir, "audit.log")
	cfg := func(src string) bridge.Config {
		as, err := audit.New(log)
		if err != nil {
			t.Fatal(err)
		}
		return bridge.Config{Servers: addrs, Watch: []string{g}, Source: src, Sinks: []publish.Sink{jsSink(t, url), as},
			Lossless: []string{"audit"}, DrainTimeout: time.Second}
	}
	r1 := start(t, cfg("one"))
	waitFor(t, 15*time.Second, "a in the audit log", auditHas(log, func(e publish.Event) bool { return e.Owner != nil && e.Owner.Node == a.Node() }))
	// The audit log's directory goes away (a disk unmounted, say).
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := tenureBetween(ctx, t, url, g, l, a)
	_ = r1.stop(t) // the audit backlog is lost with it (as with kill -9)

	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir+".away", dir); err != nil {
		t.Fatal(err)
	}
	events := collect(t, url, "herald.*."+publish.MustTokens(g))
	start(t, cfg("two"))
	events.waitCount(t, 20*time.Second, "the restarted bridge's snapshot", 1, func(e publish.Event) bool { return e.Snapshot && e.Source == "two" })
	waitFor(t, 10*time.Second, "the snapshot in the audit log", auditHas(log, func(e publish.Event) bool { return e.Source == "two" }))
	requireTenureOrGap(t, log, b)
}

// lockTaken is a lock on g, taken (a), with a context for the test's
// steps.
func lockTaken(t *testing.T, addrs []string, g string) (*elect.Lock, *elect.Handle, context.Context) {
	t.Helper()
	l, err := elect.NewLock(session(t, addrs), g, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 90*time.Second)
	a, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return l, a, ctx
}

// auditHas reports whether the audit log at log holds an event that cond
// accepts.
func auditHas(log string, cond func(publish.Event) bool) func() bool {
	return func() bool {
		evs, _ := audit.ReadAll(context.Background(), log, nil)
		for _, e := range evs {
			if cond(e) {
				return true
			}
		}
		return false
	}
}

// TestStandbyTakingOverWithAnAuditLogBehindMarksAGap: the same fall
// behind, through high availability. Bridge y, with its own audit log,
// publishes a's tenure and stops; its partner x leads while b's tenure
// comes and goes, into the shared owners bucket. y starts again as a
// standby and takes over when x stops. Its audit log never heard of b:
// its history must show b's tenure or mark a gap where it was.
func TestStandbyTakingOverWithAnAuditLogBehindMarksAGap(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	g := groupPath(t)
	ha := groupPath(t) + "-ha"
	l, a, ctx := lockTaken(t, addrs, g)
	dir := t.TempDir()
	logs := map[string]string{"x": filepath.Join(dir, "x.log"), "y": filepath.Join(dir, "y.log")}
	cfg := func(src string) bridge.Config {
		as, err := audit.New(logs[src])
		if err != nil {
			t.Fatal(err)
		}
		return bridge.Config{Servers: addrs, Watch: []string{g}, HAPath: ha, Source: src, Sinks: []publish.Sink{jsSink(t, url), as},
			Lossless: []string{"audit"}, SessionTimeout: 2 * time.Second}
	}
	y := start(t, cfg("y"))
	waitFor(t, 15*time.Second, "a in y's audit log", auditHas(logs["y"], func(e publish.Event) bool { return e.Owner != nil && e.Owner.Node == a.Node() }))
	if err := y.stop(t); err != nil {
		t.Fatal(err)
	}
	x := start(t, cfg("x"))
	waitStatus(t, x.Bridge, 20*time.Second, "x active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive && len(st.NotReady()) == 0 })
	b := tenureBetween(ctx, t, url, g, l, a)

	y = start(t, cfg("y"))
	waitStatus(t, y.Bridge, 20*time.Second, "y standby", func(st bridge.Status) bool { return st.Role == bridge.RoleStandby && len(st.NotReady()) == 0 })
	if err := x.stop(t); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, y.Bridge, 20*time.Second, "y active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	// y publishes what it holds as it takes over: wait until its log
	// shows the group empty, past a's tenure.
	waitFor(t, 15*time.Second, "y's log past a's tenure", auditHas(logs["y"], func(e publish.Event) bool {
		return e.Source == "y" && e.Owner == nil && e.Type != publish.LeaderElected && e.Type != publish.LockAcquired
	}))
	requireTenureOrGap(t, logs["y"], b)
}

// tenureBetween has a release l and b take it and release it again, all
// stored in the owners bucket at url, and returns b.
func tenureBetween(ctx context.Context, t *testing.T, url, g string, l *elect.Lock, a *elect.Handle) *elect.Handle {
	t.Helper()
	w, _ := ownerWatch(t, url, g)
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	until(t, w, 15*time.Second, "b in the bucket", func(u jetstream.OwnerUpdate) bool { return u.Owner != nil && u.Owner.Owner.Node == b.Node() })
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	until(t, w, 15*time.Second, "no owner in the bucket", func(u jetstream.OwnerUpdate) bool { return u.Owner == nil })
	return b
}

// requireTenureOrGap fails t unless the history of the audit log at log
// shows b's tenure, or marks a gap where it may have been.
func requireTenureOrGap(t *testing.T, log string, b *elect.Handle) {
	t.Helper()
	evs, err := audit.ReadAll(context.Background(), log, nil)
	if err != nil {
		t.Fatal(err)
	}
	sawB, gap := false, false
	for _, r := range audit.History(evs) {
		t.Logf("row: owner=%s term=%d untilSeen=%v gap=%v missing=%v", r.Owner.Node, r.Term, r.UntilSeen, r.Gap, r.Missing)
		sawB = sawB || r.Owner.Node == b.Node()
		gap = gap || r.Gap || r.Missing
	}
	if !sawB && !gap {
		for _, e := range evs {
			t.Logf("audit event: %s source=%s snapshot=%v gap=%v zxid=%d", e.Type, e.Source, e.Snapshot, e.Gap, e.Zxid)
		}
		t.Errorf("the history of %s leaves b's tenure out with no gap mark", log)
	}
}
