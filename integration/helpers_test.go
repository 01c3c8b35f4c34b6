package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/heraldtest"
)

func TestMain(m *testing.M) { heraldtest.Main(m, closeBenchServers) }

// groupPath returns a ZooKeeper path no other test or benchmark uses.
func groupPath(t testing.TB, what string) string { return heraldtest.Path(t, "/it", what) }

func ctxFor(t testing.TB, d time.Duration) context.Context { return heraldtest.Ctx(t, d) }

// session opens a herald session closed when t ends.
func session(t testing.TB, servers []string, opts ...elect.SessionOption) *elect.Session {
	t.Helper()
	return heraldtest.Session(t, servers, opts...)
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// rawConn opens a plain go-zookeeper connection (a foreign client) and
// waits for its session.
func rawConn(t testing.TB, servers []string, timeout time.Duration) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect(servers, timeout, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(20 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				go drain(ev)
				return c
			}
		case <-deadline:
			t.Fatalf("go-zookeeper: no session from %v in 20s", servers)
		}
	}
}

func drain(ch <-chan zk.Event) {
	for range ch {
	}
}

// mkdirs creates path and its parents as persistent nodes.
func mkdirs(t testing.TB, c *zk.Conn, path string) {
	t.Helper()
	p := ""
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		p += "/" + seg
		if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatalf("create %s: %v", p, err)
		}
	}
}

// eventually polls cond until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// watcher reads an observer's changes and waits for the ones a test expects.
type watcher struct {
	t     testing.TB
	group string
	o     *elect.Observer
	last  elect.Change
}

func observe(t testing.TB, s *elect.Session, group string, opts ...elect.ObserveOption) *watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	o, err := elect.Observe(ctx, s, group, opts...)
	if err != nil {
		cancel()
		t.Fatalf("observe %s: %v", group, err)
	}
	t.Cleanup(func() { cancel(); o.Wait() })
	return &watcher{t: t, group: group, o: o}
}

// await returns the first change that satisfies ok, skipping others; it
// fails the test after d or when the observer stops.
func (w *watcher) await(what string, d time.Duration, ok func(elect.Change) bool) elect.Change {
	w.t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case c, open := <-w.o.Changes():
			if !open {
				w.t.Fatalf("observer stopped (%v) while waiting for %s", w.o.Err(), what)
			}
			w.last = c
			if c.Group != w.group {
				w.t.Fatalf("observer of %s reported a change of %s: %s", w.group, c.Group, describe(c))
			}
			if ok(c) {
				return c
			}
		case <-timer.C:
			w.t.Fatalf("no %s within %v; last change seen: %s", what, d, describe(w.last))
		}
	}
}

// owner waits for a change whose owner is the node named node (any kind:
// the snapshot or an owner change) and returns it.
func (w *watcher) owner(node string, d time.Duration) elect.Change {
	w.t.Helper()
	return w.await("owner "+node, d, func(c elect.Change) bool {
		return c.Owner != nil && c.Owner.Node == node && (c.Kind == elect.Snapshot || c.Kind == elect.OwnerChanged)
	})
}

// kind waits for a change of kind k about node (Candidate for joined/left).
func (w *watcher) candidate(k elect.ChangeKind, node string, d time.Duration) elect.Change {
	w.t.Helper()
	return w.await(string(k)+" "+node, d, func(c elect.Change) bool {
		return c.Kind == k && c.Candidate != nil && c.Candidate.Node == node
	})
}

func describe(c elect.Change) string {
	if c.Kind == "" {
		return "none"
	}
	var q []string
	for _, p := range c.Queue {
		q = append(q, p.String())
	}
	owner := "none"
	if c.Owner != nil {
		owner = c.Owner.String()
	}
	prev := "none"
	if c.Previous != nil {
		prev = c.Previous.String()
	}
	return fmt.Sprintf("%s %s (%s) owner %s previous %s reason %q queue [%s]", c.Kind, c.Group, c.Recipe, owner, prev, c.Reason, strings.Join(q, ", "))
}

// queueIDs lists the ids of a change's queue, owner first.
func queueIDs(c elect.Change) []string {
	out := make([]string, len(c.Queue))
	for i, p := range c.Queue {
		out[i] = p.ID
	}
	return out
}
