package integration_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// bridge is herald's bridge wired by hand for the benchmarks: the groups
// observed through one ObserveMany, as the bridge does, feeding one
// pipeline that fans out to sinks.
type bridge struct {
	p      *publish.Pipeline
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startBridge(b testing.TB, s *elect.Session, groups []string, sinks ...publish.Sink) *bridge {
	b.Helper()
	p, err := publish.New(sinks, publish.WithSource("bench-bridge"))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	br := &bridge{p: p, cancel: cancel}
	br.wg.Add(1)
	go func() { defer br.wg.Done(); _ = p.Run(ctx) }()
	m, err := elect.ObserveMany(ctx, s)
	if err != nil {
		b.Fatal(err)
	}
	for _, g := range groups {
		if err := m.Add(g); err != nil {
			b.Fatal(err)
		}
	}
	br.wg.Add(1)
	go func() { defer br.wg.Done(); _ = p.Consume(ctx, m.Changes()); <-m.Done() }()
	b.Cleanup(br.stop)
	return br
}

func (br *bridge) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = br.p.Close(ctx)
	br.cancel()
	br.wg.Wait()
}

// arrival is an event as a consumer received it, and when.
type arrival struct {
	e  publish.Event
	at time.Time
}

// alternate keeps candidates campaigning on group: each one that leads is
// sent on the returned channel and, once it resigns, campaigns again.
func alternate(b testing.TB, addrs []string, group string, n int) <-chan *elect.Handle {
	b.Helper()
	leaders := make(chan *elect.Handle, n)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range n {
		e, err := elect.NewElection(benchSessionTB(b, addrs), group, elect.CreateParents())
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				h, err := e.Campaign(ctx, fmt.Sprint("c", i))
				if err != nil {
					return
				}
				leaders <- h
				select {
				case <-h.Done():
				case <-ctx.Done():
					_ = h.Resign(context.Background())
				}
			}
		}()
	}
	b.Cleanup(func() { cancel(); wg.Wait() })
	return leaders
}

func benchSessionTB(b testing.TB, addrs []string) *elect.Session {
	return session(b, addrs, elect.WithSessionTimeout(benchSessionTimeout))
}

// changeLatency makes n leadership changes (the leader resigns, the next
// one takes over) and measures from just before each resign to the
// consumer receiving the new leader's leader.elected event.
func changeLatency(b testing.TB, leaders <-chan *elect.Handle, got <-chan arrival, n int) []time.Duration {
	b.Helper()
	h := <-leaders
	await := func(node string) time.Time {
		timer := time.NewTimer(30 * time.Second)
		defer timer.Stop()
		for {
			select {
			case a := <-got:
				if a.e.Type == publish.LeaderElected && a.e.Owner != nil && a.e.Owner.Node == node {
					return a.at
				}
			case <-timer.C:
				b.Fatalf("no leader.elected for %s within 30s", node)
			}
		}
	}
	await(h.Node()) // the snapshot, or the first election
	out := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if err := h.Resign(context.Background()); err != nil {
			b.Fatal(err)
		}
		h = <-leaders
		out = append(out, await(h.Node()).Sub(t0))
	}
	return out
}
