package integration_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// resource stands for what a lock protects: it remembers the highest term
// that wrote to it and who is working on it, and records every overlap and
// every write fenced by a lower term than one it has already seen.
type resource struct {
	mu       sync.Mutex
	maxTerm  int64
	inside   map[string]int64 // holder id -> term, while working
	byTerm   map[int64]string
	writes   int64
	tenures  int64
	failures []string
}

func newResource() *resource {
	return &resource{inside: map[string]int64{}, byTerm: map[int64]string{}}
}

func (r *resource) fail(format string, args ...any) {
	r.failures = append(r.failures, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
}

func (r *resource) enter(id string, term int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for other, t := range r.inside {
		r.fail("%s (term %d) started while %s (term %d) was still working", id, term, other, t)
	}
	if prev, ok := r.byTerm[term]; ok && prev != id {
		r.fail("term %d used by %s and by %s", term, prev, id)
	}
	r.byTerm[term] = id
	r.inside[id] = term
	r.tenures++
}

func (r *resource) write(id string, term int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if term < r.maxTerm {
		r.fail("%s wrote with term %d after term %d had written", id, term, r.maxTerm)
		return
	}
	r.maxTerm = term
	r.writes++
}

func (r *resource) leave(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.inside, id)
}

func (r *resource) progress() (writes, tenures int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writes, r.tenures
}

// work is what a lock holder does: a few fenced writes, each only while
// its handle says the lock is still safely held. A handle whose ownership
// ended before its term was known has term 0, which no fence takes: it
// does no work (two such handles are not two holders of one term).
func (r *resource) work(ctx context.Context, h *elect.Handle) {
	term := h.Term()
	if term == 0 {
		return // ownership ended before its term arrived: nothing to fence with
	}
	r.enter(h.ID(), term)
	defer r.leave(h.ID())
	for i := 0; i < 20 && ctx.Err() == nil; i++ {
		if !h.Held() {
			return
		}
		r.write(h.ID(), h.Term())
		pause(ctx, 2*time.Millisecond)
	}
}

// TestChaos (HERALD_CHAOS=1, `make chaos`): ten herald lock contenders on a
// 3-node ensemble, reached through fault proxies, while members are killed
// and restarted (the ensemble leader among them), client connections are
// cut, and a member is paused with SIGSTOP. Never two holders at once, no
// write with a stale term, and the lock keeps changing hands.
func TestChaos(t *testing.T) {
	if os.Getenv("HERALD_CHAOS") != "1" {
		t.Skip("chaos test: set HERALD_CHAOS=1 (make chaos); HERALD_CHAOS_DURATION sets how long (default 2m)")
	}
	duration := 2 * time.Minute
	if v := os.Getenv("HERALD_CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("HERALD_CHAOS_DURATION=%q: want a positive Go duration such as 90s or 5m", v)
		}
		duration = d
	}
	zkc := zktest.ForTest(t, zkserver.Config{Nodes: 3})
	var proxies []*faultproxy.Proxy
	var via []string
	for _, m := range zkc.Members() {
		p, err := faultproxy.New(m.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		proxies, via = append(proxies, p), append(via, p.Addr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), duration+3*time.Minute)
	defer cancel()
	group := groupPath(t, "lock")
	res := newResource()
	var cs []*contender
	for i := range 10 {
		cs = append(cs, &contender{id: fmt.Sprintf("w%d", i), servers: via, lock: true, timeout: 3 * time.Second, hold: res.work})
	}
	checker := session(t, zkc.Addrs())
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var x exclusion
	wg.Add(1 + len(cs))
	go func() { defer wg.Done(); x.watch(runCtx, checker, cs) }()
	for _, c := range cs {
		go func() { defer wg.Done(); c.run(runCtx, group) }()
	}
	defer func() { stop(); wg.Wait() }()

	faults := chaosLoop(t, ctx, zkc, proxies, duration)
	t.Logf("faults: %v", faults)

	// Healed: the lock must keep moving.
	w0, n0 := res.progress()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if w, n := res.progress(); w > w0+50 && n > n0+5 {
			break
		}
		if time.Now().After(deadline) {
			stuck(t, checker, group, cs)
			t.Fatal("no progress within a minute after the chaos")
		}
	}
	stop()
	wg.Wait()
	res.mu.Lock()
	failures, writes, tenures := res.failures, res.writes, res.tenures
	res.mu.Unlock()
	violations, samples, maxHeld := x.report()
	t.Logf("%d tenures, %d fenced writes, %d samples, at most %d handles held at once", tenures, writes, samples, maxHeld)
	if len(failures) > 0 {
		t.Errorf("resource saw %d failures:\n%v", len(failures), failures)
	}
	if len(violations) > 0 {
		t.Errorf("two holders at once:\n%v", violations)
	}
	if tenures < int64(duration/time.Second) {
		t.Errorf("only %d tenures in %v: progress was lost", tenures, duration)
	}
}

// chaosLoop injects one fault at a time until duration passes, healing
// each before the next so that a quorum always comes back.
func chaosLoop(t *testing.T, ctx context.Context, zkc *zkserver.Cluster, proxies []*faultproxy.Proxy, duration time.Duration) map[string]int {
	t.Helper()
	counts := map[string]int{}
	end := time.Now().Add(duration)
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for time.Now().Before(end) && ctx.Err() == nil {
		pause(ctx, time.Duration(500+rnd.IntN(1500))*time.Millisecond)
		switch rnd.IntN(4) {
		case 0:
			m := zkc.Member(rnd.IntN(zkc.Len()))
			counts["kill member"]++
			chaosKill(t, ctx, m, time.Duration(500+rnd.IntN(2500))*time.Millisecond)
		case 1:
			l, err := zkc.Leader(ctx)
			if err != nil {
				t.Fatal(err)
			}
			counts["kill leader"]++
			chaosKill(t, ctx, l, time.Duration(500+rnd.IntN(2500))*time.Millisecond)
		case 2:
			counts["cut connections"]++
			proxies[rnd.IntN(len(proxies))].Cut()
		case 3:
			m := zkc.Member(rnd.IntN(zkc.Len()))
			counts["pause member"]++
			if err := m.Pause(); err != nil {
				t.Fatal(err)
			}
			pause(ctx, time.Duration(1000+rnd.IntN(4000))*time.Millisecond)
			if err := m.Resume(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := zkc.Leader(ctx); err != nil {
			t.Fatalf("ensemble did not recover: %v", err)
		}
	}
	return counts
}

func chaosKill(t *testing.T, ctx context.Context, m *zkserver.Server, down time.Duration) {
	t.Helper()
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	pause(ctx, down)
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
}

// stuck logs what a lock that stopped moving looks like: the queue as
// ZooKeeper lists it, with each node's session, and what each contender
// holds, so that a stall can be told from the log.
func stuck(t *testing.T, checker *elect.Session, group string, cs []*contender) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if v, err := elect.ReadGroup(ctx, checker, group); err != nil {
		t.Logf("the group: %v", err)
	} else {
		t.Logf("the group: owner %+v, blocked %+v", v.Owner, v.Blocked)
		for _, p := range v.Queue {
			t.Logf("  node %s session %s suspect %q", p.Node, p.SessionHex(), p.Suspect)
		}
	}
	for _, c := range cs {
		c.mu.Lock()
		if h := c.cur; h != nil {
			t.Logf("contender %s: node %s held %v reason %q err %v", c.id, h.Node(), h.Held(), h.Reason(), h.Err())
		} else {
			t.Logf("contender %s: holds nothing (%d handles so far)", c.id, len(c.handles))
		}
		c.mu.Unlock()
	}
}
