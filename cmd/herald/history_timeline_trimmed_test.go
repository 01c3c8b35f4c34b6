package main

import (
	"strings"
	"testing"
)

// TestTimelineDrawsAnOwnerWhoseEventsWereDropped: history --svg of a group
// whose stored events were all dropped while its owner holds. The table
// showed worker-1 from the owners view, and the timeline did not (found
// by a review): it draws it too now.
func TestTimelineDrawsAnOwnerWhoseEventsWereDropped(t *testing.T) {
	g, url, kafka := trimmedIdleGroup(t)
	for _, src := range [][]string{{"--nats", url}, {"--kafka", kafka}} {
		out, stderr, code := heraldRun(t, nil, "history", g, src[0], src[1], "--svg", "-")
		if !strings.Contains(out, "worker-1") {
			t.Errorf("history %v --svg -: exit %d, worker-1 (shown by the table) missing from the chart:\n%.600s\n%s", src, code, out, stderr)
		}
	}
}
