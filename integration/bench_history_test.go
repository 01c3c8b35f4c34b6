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
// each group's order and told as tenures. It reports events per second and
// the bytes allocated per event; a year's log of a busy fleet holds
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
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		events, err := audit.ReadAll(ctx, path, nil)
		must(b, err)
		ts := audit.History(audit.Merge(events))
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if len(ts) != groups*rounds {
			b.Fatalf("%d tenures, want %d", len(ts), groups*rounds)
		}
		n := float64(groups * rounds)
		perEvent := float64(after.TotalAlloc-before.TotalAlloc) / n
		b.ReportMetric(n/took.Seconds(), "events/s")
		b.ReportMetric(perEvent, "alloc-bytes/event")
		table(benchOut(), fmt.Sprintf("history of an audit log, %d events over %d groups (read, merge, tenures)", groups*rounds, groups), []row{
			{what: "events/s", herald: fmt.Sprintf("%.0f", n/took.Seconds())},
			{what: "bytes allocated per event", herald: fmt.Sprintf("%.0f", perEvent)},
			{what: "heap obtained from the system", herald: fmt.Sprintf("%d MB", after.HeapSys>>20)},
		})
	}
}
