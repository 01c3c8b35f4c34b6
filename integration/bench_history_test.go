package integration_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

// BenchmarkAuditHistory: what herald history --audit spends on a big log:
// 200,000 leader.elected events over 1,000 groups, interleaved as one
// bridge writes them, read (with the log's rotated files), merged into
// each group's order and told as tenures: every event held at once (as
// the timeline reads them), and in batches of groups holding a quarter of
// the log (as history --audit reads a log bigger than its
// --events-in-memory). It reports events per second, the bytes allocated
// per event and the peak heap of each; a year's log of a busy fleet holds
// millions.
func BenchmarkAuditHistory(b *testing.B) {
	const groups, rounds = 1000, 200
	path := filepath.Join(b.TempDir(), "audit.log")
	s, err := audit.New(path)
	must(b, err)
	ctx := context.Background()
	must(b, s.Connect(ctx))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	batch := make([]publish.Event, 0, groups)
	for i := range rounds {
		for g := range groups {
			n := int64(i*groups + g + 1)
			e := publish.Event{Type: publish.LeaderElected, Group: fmt.Sprintf("/svc/g%d", g), Recipe: elect.RecipeElection,
				Term: n, Zxid: n, Time: t0.Add(time.Duration(n) * time.Millisecond), Source: "bench",
				Owner: &publish.Participant{ID: fmt.Sprint("c", i%3), Node: fmt.Sprintf("n_%010d", i)}}
			if i > 0 {
				e.Previous = &publish.Participant{ID: fmt.Sprint("c", (i-1)%3), Node: fmt.Sprintf("n_%010d", i-1)}
				e.Reason = elect.ReasonResigned
			}
			batch = append(batch, e.WithID())
		}
		must(b, s.Write(ctx, batch))
		batch = batch[:0]
	}
	must(b, s.Close())
	for range b.N {
		n := float64(groups * rounds)
		// Every event held at once, as the timeline reads them.
		var whole []audit.Tenure
		batched := 0
		wholeTook, wholeAlloc, wholePeak := heapWhile(func() {
			events, err := audit.ReadAll(ctx, path, nil)
			must(b, err)
			whole = audit.History(audit.Merge(events))
		})
		told := len(whole)
		whole = nil
		// herald history --audit's way, holding a quarter of the log at
		// once (the rows it shows go to a file, see audit.Spool).
		batchTook, _, batchPeak := heapWhile(func() {
			_, err := audit.ReadBatches(ctx, []string{path}, "", groups*rounds/4, func(logs [][]publish.Event) error {
				batched += len(audit.History(audit.Merge(logs...)))
				return nil
			})
			must(b, err)
		})
		if told != groups*rounds || batched != told {
			b.Fatalf("%d and %d tenures, want %d", told, batched, groups*rounds)
		}
		b.ReportMetric(n/wholeTook.Seconds(), "events/s")
		b.ReportMetric(float64(wholeAlloc)/n, "alloc-bytes/event")
		b.ReportMetric(float64(wholePeak>>20), "peak-heap-MB")
		b.ReportMetric(float64(batchPeak>>20), "batched-peak-heap-MB")
		table(benchOut(), fmt.Sprintf("history of an audit log, %d events over %d groups (read, merge, tenures)", groups*rounds, groups), []row{
			{what: "events/s, all held", herald: fmt.Sprintf("%.0f", n/wholeTook.Seconds())},
			{what: "events/s, in 4 batches of groups", herald: fmt.Sprintf("%.0f", n/batchTook.Seconds())},
			{what: "bytes allocated per event, all held", herald: fmt.Sprintf("%.0f", float64(wholeAlloc)/n)},
			{what: "peak heap, all held", herald: fmt.Sprintf("%d MB", wholePeak>>20)},
			{what: "peak heap, in 4 batches", herald: fmt.Sprintf("%d MB", batchPeak>>20)},
		})
	}
}

// heapWhile runs f and returns how long it took, the bytes it allocated
// and the largest heap in use seen while it ran (sampled every 5 ms).
func heapWhile(f func()) (took time.Duration, alloc, peak uint64) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		var m runtime.MemStats
		top := uint64(0)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&m)
			top = max(top, m.HeapInuse)
			select {
			case <-stop:
				done <- top
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	f()
	took = time.Since(start)
	close(stop)
	peak = <-done
	runtime.ReadMemStats(&after)
	return took, after.TotalAlloc - before.TotalAlloc, max(peak, after.HeapInuse)
}
