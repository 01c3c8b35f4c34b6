package integration_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver"
)

// benchSessionTimeout is long so that idle pings stay rare next to the
// packets a benchmark counts.
const benchSessionTimeout = 60 * time.Second

func benchSession(b *testing.B, addrs []string) *elect.Session {
	b.Helper()
	return session(b, addrs, elect.WithSessionTimeout(benchSessionTimeout))
}

// BenchmarkLockHandoff: 10 clients, each with its own session, take and
// give back one lock for 10 s: herald's elect.Lock, then go-zookeeper's
// zk.Lock, on the same server.
func BenchmarkLockHandoff(b *testing.B) {
	zkc := benchCluster(b)
	srv := zkc.Member(0)
	const clients, window = 10, 10 * time.Second
	for range b.N {
		hp, gp := groupPath(b, "herald-lock"), groupPath(b, "gozk-lock")
		herald, hpk := lockLoop(b, srv, clients, window, func(i int) func(ctx context.Context) error {
			l, err := elect.NewLock(benchSession(b, zkc.Addrs()), hp, elect.CreateParents(), elect.WithID(fmt.Sprint("h", i)))
			if err != nil {
				b.Fatal(err)
			}
			return func(ctx context.Context) error {
				h, err := l.Acquire(ctx)
				if err != nil {
					return err
				}
				return h.Release(ctx)
			}
		})
		peer, gpk := lockLoop(b, srv, clients, window, func(i int) func(ctx context.Context) error {
			l := zk.NewLock(rawConn(b, zkc.Addrs(), benchSessionTimeout), gp, zk.WorldACL(zk.PermAll))
			return func(context.Context) error {
				if err := l.Lock(); err != nil {
					return err
				}
				return l.Unlock()
			}
		})
		ratio := herald / peer
		b.ReportMetric(herald, "herald-handoffs/s")
		b.ReportMetric(peer, "gozk-handoffs/s")
		b.ReportMetric(ratio, "ratio")
		table(benchOut(), "Lock handoff throughput, 10 clients with their own sessions, 10 s each, one lock", []row{
			{what: "handoffs/s", herald: fmt.Sprintf("%.0f", herald), peer: fmt.Sprintf("%.0f (go-zookeeper zk.Lock)", peer),
				ratio: fmt.Sprintf("%.2fx", ratio), target: ">= 1.5x", verdict: met(ratio >= 1.5)},
			{what: "ZooKeeper packets per cycle", herald: fmt.Sprintf("%.2f", hpk), peer: fmt.Sprintf("%.2f", gpk),
				ratio: fmt.Sprintf("%.2fx", hpk/gpk)},
		})
	}
}

// lockLoop runs clients loops of take-and-release for window and returns
// the completed cycles per second and the packets srv received per cycle.
func lockLoop(b *testing.B, srv *zkserver.Server, clients int, window time.Duration, mk func(i int) func(context.Context) error) (float64, float64) {
	b.Helper()
	cycles := make([]func(context.Context) error, clients)
	for i := range cycles {
		cycles[i] = mk(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	var n atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	before := packets(b, srv)
	start := time.Now()
	for _, cycle := range cycles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := cycle(ctx); err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	after := packets(b, srv)
	close(errs)
	for err := range errs {
		b.Fatalf("lock loop: %v", err)
	}
	done := float64(n.Load())
	return done / elapsed.Seconds(), float64(after-before-1) / done
}

// BenchmarkElectionHandoff: 50 candidates, 40 handoffs (the leader resigns,
// the next leader's Campaign returns), against the raw floor of the same
// server: the time from a delete to its exists watch firing. It also counts
// ZooKeeper packets per handoff.
func BenchmarkElectionHandoff(b *testing.B) {
	zkc := benchCluster(b)
	srv := zkc.Member(0)
	const candidates, handoffs = 50, 40
	for range b.N {
		floor := deleteWatchFloor(b, zkc.Addrs(), handoffs)
		group := groupPath(b, "election")
		leaders := make(chan *elect.Handle, candidates)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i := range candidates {
			e, err := elect.NewElection(benchSession(b, zkc.Addrs()), group, elect.CreateParents())
			if err != nil {
				b.Fatal(err)
			}
			// Join one by one so the queue order is known and every
			// candidate waits before the measurement starts.
			joined := make(chan struct{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				go func() {
					// The node exists once Participants lists it.
					for {
						ps, _ := e.Participants(ctx)
						if len(ps) > i || ctx.Err() != nil {
							close(joined)
							return
						}
						time.Sleep(time.Millisecond)
					}
				}()
				h, err := e.Campaign(ctx, fmt.Sprint("c", i))
				if err == nil {
					leaders <- h
				}
			}()
			<-joined
		}
		h := <-leaders
		idle := idleRate(b, srv)
		before := packets(b, srv)
		start := time.Now()
		lat := make([]time.Duration, 0, handoffs)
		for range handoffs {
			t0 := time.Now()
			if err := h.Resign(ctx); err != nil {
				b.Fatal(err)
			}
			h = <-leaders
			lat = append(lat, time.Since(t0))
		}
		elapsed := time.Since(start)
		after := packets(b, srv)
		cancel()
		_ = h.Resign(context.Background())
		wg.Wait()
		per := (float64(after-before-1) - idle*elapsed.Seconds()) / handoffs
		p50, p99 := percentile(lat, 50), percentile(lat, 99)
		f50, f99 := percentile(floor, 50), percentile(floor, 99)
		b.ReportMetric(msf(p50), "herald-p50-ms")
		b.ReportMetric(msf(p99), "herald-p99-ms")
		b.ReportMetric(msf(f50), "floor-p50-ms")
		b.ReportMetric(per, "packets/handoff")
		table(benchOut(), fmt.Sprintf("Election handoff, %d candidates, %d handoffs (peer = raw delete -> exists watch on the same server)", candidates, handoffs), []row{
			{what: "latency p50", herald: ms(p50), peer: ms(f50), ratio: fmt.Sprintf("%.2fx", float64(p50)/float64(f50)), target: "<= 2x floor", verdict: met(p50 <= 2*f50)},
			{what: "latency p99", herald: ms(p99), peer: ms(f99), ratio: fmt.Sprintf("%.2fx", float64(p99)/float64(f99)), target: "< 3 ms", verdict: met(p99 < 3*time.Millisecond)},
			{what: "ZooKeeper packets per handoff", herald: fmt.Sprintf("%.2f", per), target: "<= 3", verdict: met(per <= 3)},
		})
	}
}

// deleteWatchFloor measures n times how long ZooKeeper takes from a delete
// request to the exists watch on that node firing at another session.
func deleteWatchFloor(b *testing.B, addrs []string, n int) []time.Duration {
	b.Helper()
	del, watch := rawConn(b, addrs, benchSessionTimeout), rawConn(b, addrs, benchSessionTimeout)
	base := groupPath(b, "floor")
	mkdirs(b, del, base)
	out := make([]time.Duration, 0, n)
	for i := range n {
		p := fmt.Sprintf("%s/n%d", base, i)
		if _, err := del.Create(p, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			b.Fatal(err)
		}
		ok, _, ch, err := watch.ExistsW(p)
		if err != nil || !ok {
			b.Fatalf("exists watch on %s: %v %v", p, ok, err)
		}
		t0 := time.Now()
		if err := del.Delete(p, -1); err != nil {
			b.Fatal(err)
		}
		if ev := <-ch; ev.Type != zk.EventNodeDeleted {
			b.Fatalf("watch on %s fired with %v", p, ev.Type)
		}
		out = append(out, time.Since(t0))
	}
	return out
}

// idleRate measures the packets per second the server receives while the
// benchmark does nothing (the sessions' pings), to subtract them.
func idleRate(b *testing.B, srv interface {
	PacketsReceived(context.Context) (int64, error)
}) float64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const window = time.Second
	p0, err := srv.PacketsReceived(ctx)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(window) // a measuring window, not ordering
	p1, err := srv.PacketsReceived(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return float64(p1-p0-1) / time.Since(t0).Seconds()
}
