package integration_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// The benchmarks share one ZooKeeper of their own (every benchmark in one
// run measures against the same server), started on first use with no
// limit on connections per client address: the herd benchmark opens a
// thousand sessions from 127.0.0.1.
var benchZK struct {
	mu  sync.Mutex
	c   *zkserver.Cluster
	err error
}

func benchCluster(b *testing.B) *zkserver.Cluster {
	b.Helper()
	benchZK.mu.Lock()
	defer benchZK.mu.Unlock()
	if benchZK.c == nil && benchZK.err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		benchZK.c, benchZK.err = zkserver.Start(ctx, zkserver.Config{MaxClientCnxns: 0, JVMHeap: "512m"})
		cancel()
		if benchZK.err == nil {
			benchZK.err = warmUp(benchZK.c.Addrs())
		}
	}
	if err := benchZK.err; err != nil {
		if zkserver.IsNotInstalled(err) && os.Getenv(zktest.RequireEnv) != "1" {
			b.Skipf("%v (set %s=1 to fail instead of skipping)", err, zktest.RequireEnv)
		}
		b.Fatal(err)
	}
	return benchZK.c
}

// warmUp drives the fresh server through every kind of request the
// benchmarks make (creates, sequential ephemerals, multis, reads, watches
// firing) for a few seconds, so that whichever benchmark runs first
// measures a JIT-compiled server, as the later ones do.
func warmUp(addrs []string) error {
	const workers, window = 4, 4 * time.Second
	deadline := time.Now().Add(window)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, ev, err := zk.Connect(addrs, benchSessionTimeout, zk.WithLogger(quiet{}))
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			go drain(ev)
			base := fmt.Sprintf("/warm-up-%d", w)
			acl := zk.WorldACL(zk.PermAll)
			if _, err := c.Create(base, nil, 0, acl); err != nil && err != zk.ErrNodeExists {
				errs <- fmt.Errorf("warm-up: create %s: %w", base, err)
				return
			}
			for time.Now().Before(deadline) {
				p, err := c.Create(base+"/n-", []byte("warm"), zk.FlagEphemeral|zk.FlagSequence, acl)
				if err != nil {
					errs <- fmt.Errorf("warm-up: %w", err)
					return
				}
				_, _, _, _ = c.ChildrenW(base)
				_, _, _, _ = c.GetW(p)
				_, _, _ = c.Exists(p)
				if _, err := c.Multi(&zk.SetDataRequest{Path: p, Data: []byte("x"), Version: -1}, &zk.DeleteRequest{Path: p, Version: -1}); err != nil {
					errs <- fmt.Errorf("warm-up: %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func closeBenchServers() {
	benchZK.mu.Lock()
	defer benchZK.mu.Unlock()
	if benchZK.c != nil {
		_ = benchZK.c.Close()
		benchZK.c = nil
	}
}

// packets reads zk_packets_received. The mntr request behind it is counted
// too, so a difference of two readings holds one mntr packet: subtract 1.
func packets(b *testing.B, s *zkserver.Server) int64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := s.PacketsReceived(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// zkCounts are a server's request counters, from one mntr: packets
// received, reads and writes (each request counts once in the server's
// read or update latency), and among the reads the getData and
// getChildren requests that found their node (each one goes through the
// server's response cache, a hit or a miss). Reads of a node that is gone
// are the reads that are neither. deletedWatches counts the watches
// deletions fired.
type zkCounts struct {
	packets, reads, writes, getData, getChildren, deletedWatches int64
}

func counts(b *testing.B, s *zkserver.Server) zkCounts {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := s.Mntr(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, ok := m["zk_packets_received"]; !ok {
		b.Fatalf("mntr on %s has no zk_packets_received", s.Addr())
	}
	sum := func(keys ...string) int64 {
		var n int64
		for _, k := range keys {
			v, _ := strconv.ParseInt(m[k], 10, 64)
			n += v
		}
		return n
	}
	return zkCounts{
		packets:        sum("zk_packets_received"),
		reads:          sum("zk_cnt_readlatency"),
		writes:         sum("zk_cnt_updatelatency"),
		getData:        sum("zk_response_packet_cache_hits", "zk_response_packet_cache_misses"),
		getChildren:    sum("zk_response_packet_get_children_cache_hits", "zk_response_packet_get_children_cache_misses"),
		deletedWatches: sum("zk_sum_node_deleted_watch_count"),
	}
}

// since is c minus an earlier reading; the later mntr request counts as
// a packet, so it is taken off.
func (c zkCounts) since(o zkCounts) zkCounts {
	return zkCounts{
		packets: c.packets - o.packets - 1, reads: c.reads - o.reads, writes: c.writes - o.writes,
		getData: c.getData - o.getData, getChildren: c.getChildren - o.getChildren, deletedWatches: c.deletedWatches - o.deletedWatches,
	}
}

func (c zkCounts) add(o zkCounts) zkCounts {
	return zkCounts{
		packets: c.packets + o.packets, reads: c.reads + o.reads, writes: c.writes + o.writes,
		getData: c.getData + o.getData, getChildren: c.getChildren + o.getChildren, deletedWatches: c.deletedWatches + o.deletedWatches,
	}
}

// gone is the reads that found no node: getData (or exists) on a node
// deleted meanwhile, or on a guessed name that was never created.
func (c zkCounts) gone() int64 { return c.reads - c.getData - c.getChildren }

func benchOut() io.Writer { return os.Stdout }

// percentile returns the p-th percentile (0..100) of ds, nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p/100*float64(len(s))+0.5) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

// row is one line of a benchmark's table.
type row struct {
	what, herald, peer, ratio, target, verdict string
}

// table prints a benchmark's figures: herald's, the peer's, their ratio,
// and whether the target was met. Benchmarks never fail on a target: the
// machine is shared and noisy.
func table(w io.Writer, title string, rows []row) {
	fmt.Fprintf(w, "\n%s (shared, noisy machine: read figures as indications)\n", title)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\therald\tpeer\tratio\ttarget\tresult")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.what, dash(r.herald), dash(r.peer), dash(r.ratio), dash(r.target), dash(r.verdict))
	}
	tw.Flush()
}

// wideTable prints a table with the given columns, for benchmarks that
// compare herald with more than one peer.
func wideTable(w io.Writer, title string, head []string, rows [][]string) {
	fmt.Fprintf(w, "\n%s (shared, noisy machine: read figures as indications)\n", title)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range rows {
		cells := make([]string, len(head))
		for i := range cells {
			if i < len(r) {
				cells[i] = dash(r[i])
			} else {
				cells[i] = "-"
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
}

func dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
