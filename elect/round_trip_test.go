package elect_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// TestWaiterSetsItsWatchesInOneRoundTrip: a waiter a network away from
// the server (a proxy adding a delay each way) sets its three watches (on
// its own node, the node just below and the one two below) in one round
// trip: the server registers them within a delay of each other, where
// one after another they would come a round trip apart. The waiter then
// owns in turn.
func TestWaiterSetsItsWatchesInOneRoundTrip(t *testing.T) {
	const delay = 150 * time.Millisecond
	cluster := sharedCluster(t)
	addrs := cluster.Addrs()
	path, p := groupPath(t), proxyTo(t, addrs[0])
	p.Delay(delay)
	ctx := ctxT(t, 60*time.Second)
	a, b := session(t, addrs), session(t, addrs)
	far := session(t, []string{p.Addr()}, elect.WithSessionTimeout(10*time.Second))
	la, _ := elect.NewLock(a, path, elect.CreateParents())
	lb, _ := elect.NewLock(b, path)
	lf, _ := elect.NewLock(far, path)
	ha, err := la.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	acquired := func(l *elect.Lock) chan *elect.Handle {
		ch := make(chan *elect.Handle, 1)
		go func() {
			h, err := l.Acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			ch <- h
		}()
		return ch
	}
	hb := acquired(lb)
	eventually(t, 10*time.Second, "b queued", func() bool {
		return len(watchedBy(t, cluster, b.ID(), path)) == 2 // its own node and a's
	})
	hf := acquired(lf)
	// When each of far's watches first shows on the server.
	seen := map[string]time.Time{}
	deadline := time.Now().Add(20 * time.Second)
	for len(seen) < 3 && time.Now().Before(deadline) {
		for _, w := range watchedBy(t, cluster, far.ID(), path) {
			if _, ok := seen[w]; !ok {
				seen[w] = time.Now()
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(seen) != 3 {
		t.Fatalf("far's watches on the server: %v, want three (its own node, b's and a's)", seen)
	}
	var first, last time.Time
	for _, at := range seen {
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	if spread := last.Sub(first); spread >= delay {
		t.Errorf("far's three watches reached the server over %v, more than the %v a request takes to get there: one after another, not in one round trip (%v)", spread, delay, seen)
	}
	if err := ha.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := (<-hb).Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-hf:
		if h == nil {
			t.Fatal("far did not own")
		}
		_ = h.Release(context.Background())
	case <-ctx.Done():
		t.Fatal("far never owned after a and b released")
	}
}

// watchedBy lists the paths under group on which the server holds a watch
// for session id (the four-letter command wchc).
func watchedBy(t *testing.T, cluster *zkserverCluster, id int64, group string) []string {
	t.Helper()
	out, err := cluster.Member(0).FourLetter(ctxT(t, 5*time.Second), "wchc")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch l := strings.TrimSpace(line); {
		case strings.HasPrefix(line, "0x"):
			in = strings.EqualFold(l, fmt.Sprintf("0x%x", id))
		case in && strings.HasPrefix(l, group+"/"):
			paths = append(paths, l)
		}
	}
	return paths
}

// TestFreeLockTakesOneRoundTrip: taking a free lock, or winning an empty
// election, a network away from the server costs one round trip: the
// listing that proves our node the lowest goes out right behind its
// create, not after the create's reply. (A release costs one more.)
func TestFreeLockTakesOneRoundTrip(t *testing.T) {
	const delay = 100 * time.Millisecond
	addrs := sharedAddrs(t)
	p := proxyTo(t, addrs[0])
	p.Delay(delay)
	ctx := ctxT(t, 60*time.Second)
	far := session(t, []string{p.Addr()}, elect.WithSessionTimeout(10*time.Second))
	near := session(t, addrs)
	lockPath, electionPath := groupPath(t)+"-lock", groupPath(t)+"-election"
	// The groups exist first: making them costs round trips of its own.
	nl, _ := elect.NewLock(near, lockPath, elect.CreateParents())
	ne, _ := elect.NewElection(near, electionPath, elect.CreateParents())
	for _, take := range []func() (*elect.Handle, error){
		func() (*elect.Handle, error) { return nl.Acquire(ctx) },
		func() (*elect.Handle, error) { return ne.Campaign(ctx, "near") },
	} {
		h, err := take()
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	lock, _ := elect.NewLock(far, lockPath)
	election, _ := elect.NewElection(far, electionPath)
	rtt := 2 * delay
	for _, tc := range []struct {
		name string
		take func() (*elect.Handle, error)
	}{
		{"Acquire", func() (*elect.Handle, error) { return lock.Acquire(ctx) }},
		{"TryAcquire", func() (*elect.Handle, error) { return lock.TryAcquire(ctx) }},
		{"Campaign", func() (*elect.Handle, error) { return election.Campaign(ctx, "far") }},
	} {
		for range 2 {
			start := time.Now()
			h, err := tc.take()
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			took := time.Since(start)
			if err := h.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if took >= rtt*3/2 {
				t.Errorf("%s of a free group took %v, more than one round trip (%v): the listing waited for the create's reply", tc.name, took, rtt)
			}
		}
	}
}
