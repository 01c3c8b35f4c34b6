package integration_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/nats-io/nats.go"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
	"github.com/zkherald/herald/publish"
	heraldbridge "github.com/zkherald/herald/publish/bridge"
)

// Before ObserveMany, a bridge spent two goroutines and a 64-change buffer
// on every group. These are the figures measured then on this machine
// (10,000 groups, `herald bridge --discover --nats-mode core`), printed
// beside today's.
const (
	scaleBeforeKBPerGroup = 40.0
	scaleBeforeSnapshot   = "3.9-4.8 s"
	scaleTargetKBPerGroup = 4.0
	scaleTarget100kSnap   = 30 * time.Second
)

// BenchmarkBridgeScale runs `herald bridge --discover` as its own process
// over 10,000 groups (and 100,000 with HERALD_SCALE=full, `make
// bench-scale`), each a group node with one ephemeral candidate, and
// reports the bridge's memory per group, how long the snapshot of every
// group takes, how far behind the bridge runs at a given rate of owner
// changes, and the CPU the bridge and ZooKeeper spend per change.
func BenchmarkBridgeScale(b *testing.B) {
	full := os.Getenv("HERALD_SCALE") == "full"
	sizes, rates := []int{10_000}, []int{500}
	if full {
		sizes, rates = []int{10_000, 100_000}, []int{500, 1000, 2000}
	}
	bin := buildHerald(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	zs, err := zkserver.Start(ctx, zkserver.Config{MaxClientCnxns: 0, JVMHeap: "2g"})
	if err != nil {
		if zkserver.IsNotInstalled(err) && os.Getenv(zktest.RequireEnv) != "1" {
			b.Skipf("%v (set %s=1 to fail instead of skipping)", err, zktest.RequireEnv)
		}
		b.Fatal(err)
	}
	defer zs.Close()
	if err := warmUp(zs.Addrs()); err != nil {
		b.Fatal(err)
	}
	ns := natsserver.Start(b)
	// What a bridge over no group holds (its code, runtime and buffers):
	// the cost per group is what each group adds to that.
	idle := idleRSS(b, bin, zs, ns.URL())
	rows := [][]string{{"0", "RSS of an idle bridge", fmt.Sprintf("%.0f MB", float64(idle)/(1<<20)), "", ""}}
	for _, n := range sizes {
		r := runScale(b, bin, zs, ns.URL(), n, rates, idle)
		rows = append(rows, r...)
	}
	for range b.N {
	}
	wideTable(benchOut(), "bridge at scale (herald bridge --discover, one process; core NATS)",
		[]string{"groups", "figure", "value", "before", "target"}, rows)
}

// runScale measures one bridge over n groups; rates are the owner changes
// per second it is driven at (over at most 10,000 of the groups).
func runScale(b *testing.B, bin string, zs *zkserver.Cluster, natsURL string, n int, rates []int, idle int64) [][]string {
	root := fmt.Sprintf("/scale-%d-%d", n, time.Now().UnixNano()%1e6)
	holder, owners := createGroups(b, zs.Addrs(), root, n)
	defer holder.Close()

	nc, err := nats.Connect(natsURL)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	var snaps atomic.Int64
	var lagMu sync.Mutex
	changedAt := map[string]time.Time{} // group's newest owner node -> when it was made owner
	var lags []time.Duration
	sub, err := nc.Subscribe("herald.>", func(m *nats.Msg) {
		var e publish.Event
		if json.Unmarshal(m.Data, &e) != nil || e.Owner == nil || !strings.HasPrefix(e.Group, root+"/") {
			return
		}
		if e.Snapshot {
			snaps.Add(1)
			return
		}
		lagMu.Lock()
		if t0, ok := changedAt[e.Group+"/"+e.Owner.Node]; ok {
			lags = append(lags, time.Since(t0))
			delete(changedAt, e.Group+"/"+e.Owner.Node)
		}
		lagMu.Unlock()
	})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	_ = sub.SetPendingLimits(-1, -1)

	start := time.Now()
	cmd, httpAddr := startScaleBridge(b, bin, zs, natsURL, root)
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	snapshot := time.Since(start)
	deadline := time.Now().Add(time.Minute)
	for snaps.Load() < int64(n) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := snaps.Load(); got < int64(n) {
		b.Fatalf("%d snapshot events of %d groups arrived", got, n)
	}
	time.Sleep(3 * time.Second) // let the heap settle after the snapshot burst
	rss := procRSS(b, cmd.Process.Pid)
	heap := metric(b, httpAddr, "go_memstats_heap_inuse_bytes")
	goroutines := metric(b, httpAddr, "go_goroutines")
	perGroup := float64(rss-idle) / 1024 / float64(n)
	ng := strconv.Itoa(n)
	rows := [][]string{
		{ng, "snapshot of every group", fmt.Sprintf("%.1f s", snapshot.Seconds()), dash(map[bool]string{true: scaleBeforeSnapshot}[n == 10_000]),
			dash(map[bool]string{true: "≤ 30 s " + met(snapshot <= scaleTarget100kSnap)}[n == 100_000])},
		{ng, "RSS per group, above an idle bridge", fmt.Sprintf("%.2f KB (%.0f MB in all)", perGroup, float64(rss)/(1<<20)), dash(map[bool]string{true: fmt.Sprintf("%.0f KB", scaleBeforeKBPerGroup)}[n == 10_000]),
			fmt.Sprintf("≤ %.0f KB %s", scaleTargetKBPerGroup, met(perGroup <= scaleTargetKBPerGroup))},
		{ng, "heap in use per group", fmt.Sprintf("%.2f KB", heap/1024/float64(n)), "≈ 14 KB", ""},
		{ng, "goroutines", fmt.Sprintf("%.0f", goroutines), fmt.Sprintf("≈ %d", 2*n), ""},
	}
	if n > 10_000 {
		return rows
	}
	rows = append(rows, runShards(b, bin, zs, natsURL, root, n))
	for _, rate := range rates {
		lagMu.Lock()
		lags, changedAt = nil, map[string]time.Time{}
		lagMu.Unlock()
		zk0, _ := zs.Member(0).CPUTime()
		br0 := procCPU(b, cmd.Process.Pid)
		changes := drive(b, holder, root, owners, rate, 6*time.Second, &lagMu, changedAt)
		time.Sleep(2 * time.Second) // the last changes' events
		zk1, _ := zs.Member(0).CPUTime()
		br1 := procCPU(b, cmd.Process.Pid)
		lagMu.Lock()
		got := append([]time.Duration(nil), lags...)
		missing := len(changedAt)
		lagMu.Unlock()
		zkPer := (zk1 - zk0) / time.Duration(changes)
		brPer := (br1 - br0) / time.Duration(changes)
		rows = append(rows,
			[]string{ng, fmt.Sprintf("lag p50 / p99 at %d changes/s", rate),
				fmt.Sprintf("%s / %s (%d changes, %d not seen as themselves)", ms(percentile(got, 50)), ms(percentile(got, 99)), changes, missing), "", ""},
			[]string{ng, fmt.Sprintf("CPU per change at %d/s: bridge / ZooKeeper", rate),
				fmt.Sprintf("%d µs / %d µs (%.2fx)", brPer.Microseconds(), zkPer.Microseconds(), float64(brPer)/float64(zkPer)),
				"285-328 µs / ≈ 790 µs", "bridge < ZooKeeper " + met(brPer < zkPer)})
	}
	return rows
}

// startScaleBridge starts `herald bridge --discover root` and waits until
// it is ready: every group's snapshot published.
func startScaleBridge(b *testing.B, bin string, zs *zkserver.Cluster, natsURL, root string, extra ...string) (*exec.Cmd, string) {
	b.Helper()
	httpAddr := freeAddr(b)
	logf, err := os.Create(filepath.Join(b.TempDir(), "bridge.log"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = logf.Close() })
	args := []string{"bridge", "--zk", strings.Join(zs.Addrs(), ","), "--discover", root,
		"--nats", natsURL, "--nats-mode", "core", "--http", httpAddr, "--group-metrics-limit", "100"}
	if !slices.Contains(extra, "--source") { // a flag given twice is refused
		args = append(args, "--source", "scale-bench")
	}
	args = append(args, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	if !waitReady(httpAddr, 10*time.Minute) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		b.Fatalf("bridge over %s not ready in 10 minutes; its log is %s", root, logf.Name())
	}
	return cmd, httpAddr
}

// idleRSS is the resident set of a bridge over an empty discover root.
func idleRSS(b *testing.B, bin string, zs *zkserver.Cluster, natsURL string) int64 {
	b.Helper()
	c := rawConn(b, zs.Addrs(), 10*time.Second)
	root := fmt.Sprintf("/scale-idle-%d", time.Now().UnixNano()%1e6)
	if _, err := c.Create(root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		b.Fatal(err)
	}
	cmd, _ := startScaleBridge(b, bin, zs, natsURL, root)
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	time.Sleep(3 * time.Second)
	return procRSS(b, cmd.Process.Pid)
}

// runShards starts two more bridges over root, as shards 0/2 and 1/2, and
// checks from their snapshots that each group is published by exactly one
// of them, its own shard's, and none is missing.
func runShards(b *testing.B, bin string, zs *zkserver.Cluster, natsURL, root string, n int) []string {
	b.Helper()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	var mu sync.Mutex
	by := map[string][]string{} // group -> sources of its snapshot
	sub, err := nc.Subscribe("herald.>", func(m *nats.Msg) {
		var e publish.Event
		if json.Unmarshal(m.Data, &e) != nil || !e.Snapshot || !strings.HasPrefix(e.Source, "scale-shard-") || !strings.HasPrefix(e.Group, root+"/") {
			return
		}
		mu.Lock()
		by[e.Group] = append(by[e.Group], e.Source)
		mu.Unlock()
	})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	_ = sub.SetPendingLimits(-1, -1)
	for k := range 2 {
		cmd, _ := startScaleBridge(b, bin, zs, natsURL, root, "--shard", fmt.Sprintf("%d/2", k), "--source", fmt.Sprintf("scale-shard-%d", k))
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	}
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		got := len(by)
		mu.Unlock()
		if got >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // duplicates, were there any, arrive meanwhile
	mu.Lock()
	defer mu.Unlock()
	once, twice, wrong := 0, 0, 0
	for g, srcs := range by {
		switch {
		case len(srcs) > 1:
			twice++
		case srcs[0] != fmt.Sprintf("scale-shard-%d", heraldbridge.ShardOf(g, 2)):
			wrong++
		default:
			once++
		}
	}
	missing := n - len(by)
	if once != n {
		b.Errorf("two shards over %d groups: %d published once by their shard, %d twice, %d by the wrong shard, %d missing", n, once, twice, wrong, missing)
	}
	return []string{strconv.Itoa(n), "two shards (--shard 0/2, 1/2): groups published by exactly their shard",
		fmt.Sprintf("%d of %d (%d twice, %d by the other shard, %d missing)", once, n, twice, wrong, missing), "", "all " + met(once == n)}
}

// createGroups makes n groups under root, each with one ephemeral
// candidate of the returned session, in multi batches.
func createGroups(b *testing.B, addrs []string, root string, n int) (*zk.Conn, []string) {
	b.Helper()
	c := rawConn(b, addrs, 30*time.Second)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := c.Create(root, nil, 0, acl); err != nil {
		b.Fatal(err)
	}
	owners := make([]string, n)
	const batch = 500
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var ops []any
			for i := lo; i < hi; i++ {
				g := fmt.Sprintf("%s/g%06d", root, i)
				ops = append(ops, &zk.CreateRequest{Path: g, Acl: acl},
					&zk.CreateRequest{Path: g + "/n_", Data: []byte("c"), Acl: acl, Flags: zk.FlagEphemeral | zk.FlagSequence})
			}
			res, err := c.Multi(ops...)
			if err != nil {
				failed.Store(&err)
				return
			}
			for i := lo; i < hi; i++ {
				owners[i] = res[2*(i-lo)+1].String
			}
		}()
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatalf("create %d groups: %v", n, *err)
	}
	return c, owners
}

// drive changes owners at rate per second for d: each change deletes a
// group's owner and makes a new candidate, its successor, in one multi.
// It returns how many changes it made.
func drive(b *testing.B, c *zk.Conn, root string, owners []string, rate int, d time.Duration, mu *sync.Mutex, changedAt map[string]time.Time) int {
	b.Helper()
	const workers = 16
	n := min(len(owners), 10_000)
	var made atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			every := time.Duration(workers) * time.Second / time.Duration(rate)
			next := time.Now().Add(time.Duration(w) * every / workers)
			for next.Before(stop) {
				time.Sleep(time.Until(next))
				next = next.Add(every)
				i := w + workers*rand.IntN(n/workers) // each worker its own groups
				g := fmt.Sprintf("%s/g%06d", root, i)
				t0 := time.Now()
				res, err := c.Multi(&zk.DeleteRequest{Path: owners[i], Version: -1},
					&zk.CreateRequest{Path: g + "/n_", Data: []byte("c"), Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral | zk.FlagSequence})
				if err != nil {
					b.Errorf("change %s: %v", g, err)
					return
				}
				owners[i] = res[1].String
				mu.Lock()
				changedAt[g+"/"+owners[i][len(g)+1:]] = t0
				mu.Unlock()
				made.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(made.Load())
}

func freeAddr(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitReady polls /readyz until it answers 200.
func waitReady(addr string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// metric reads one unlabelled gauge from the bridge's /metrics.
func metric(b *testing.B, addr, name string) float64 {
	b.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == name {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				b.Fatal(err)
			}
			return v
		}
	}
	b.Fatalf("no %s in /metrics", name)
	return 0
}

// procRSS is a process's resident set in bytes.
func procRSS(b *testing.B, pid int) int64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if f := strings.Fields(string(line)); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no VmRSS for process %d", pid)
	return 0
}
