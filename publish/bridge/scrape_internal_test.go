package bridge

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/zkherald/herald/publish"
)

// scrapeBytesPerGroup bounds what a /metrics scrape allocates for each
// group the bridge observes. The gauges of observed and unknown groups and
// the active one each took Status, a copy of the whole groups map: some
// 200 bytes a group a scrape (2 MB of garbage at 10,000 groups, every
// scrape). Counting under the lock allocates nothing a group.
const scrapeBytesPerGroup = 8

// TestScrapeDoesNotCopyTheGroups: a scrape of a bridge observing 10,000
// groups allocates about what it does with none. No server is needed:
// the groups are recorded as the bridge records their snapshots.
func TestScrapeDoesNotCopyTheGroups(t *testing.T) {
	const n = 10_000
	b, err := New(Config{Servers: []string{"127.0.0.1:1"}, Discover: []string{"/x"}, Sinks: []publish.Sink{nopSink{}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.pipe.Close(context.Background()) })
	empty := scrapeBytes(t, b)
	ctx := context.Background()
	for i := range n {
		st := GroupLive
		if i%10 == 0 {
			st = GroupUnknown // the gauge of unknown groups reads them all
		}
		b.setGroup(ctx, fmt.Sprintf("/x/g%05d", i), st)
	}
	full := scrapeBytes(t, b)
	per := (full - empty) / n
	t.Logf("a scrape allocates %.0f bytes with no group, %.0f with %d: %.1f bytes a group", empty, full, n, per)
	if per > scrapeBytesPerGroup {
		t.Errorf("a scrape allocates %.1f bytes per observed group (%.0f with %d groups, %.0f with none), over %d", per, full, n, empty, scrapeBytesPerGroup)
	}
}

// scrapeBytes is what one gathering of the bridge's registry allocates,
// the least of a few (a collection in between does not change the
// allocations, but the fewest are the scrape's own).
func scrapeBytes(t *testing.T, b *Bridge) float64 {
	t.Helper()
	least := -1.0
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := b.reg.Gather(); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if d := float64(after.TotalAlloc - before.TotalAlloc); least < 0 || d < least {
			least = d
		}
	}
	return least
}
