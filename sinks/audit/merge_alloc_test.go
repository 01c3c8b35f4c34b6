package audit

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// bigLog is n tenures of two groups, their events interleaved as a bridge
// logs them.
func bigLog(n int) []publish.Event {
	var out []publish.Event
	for i := 1; i <= n; i++ {
		for _, g := range []string{"/a", "/b"} {
			p := &publish.Participant{ID: "p", Node: fmt.Sprintf("lock-%010d", i)}
			t := h0.Add(time.Duration(i) * time.Second)
			out = append(out,
				publish.Event{Type: publish.LockAcquired, Group: g, Recipe: elect.RecipeLock, Owner: p, Term: int64(2 * i), Zxid: int64(2 * i), Time: t, Source: "b"}.WithID(),
				publish.Event{Type: publish.LockReleased, Group: g, Recipe: elect.RecipeLock, Previous: p, Term: int64(2 * i), Zxid: int64(2*i + 1), Reason: elect.ReasonReleased, Time: t.Add(time.Millisecond), Source: "b"}.WithID())
		}
	}
	return out
}

// TestMergeAllocatesNothingPerEvent: merging a log allocates a few times
// in all, not once per event: a year's log of a busy bridge holds
// millions, and a map made for each event's id (as before) cost history
// memory and time in proportion. History tells the same tenures from the
// merged events as from the log itself, whose groups are interleaved.
func TestMergeAllocatesNothingPerEvent(t *testing.T) {
	log := bigLog(1000)
	if a := testing.AllocsPerRun(3, func() { Merge(log) }); a > float64(len(log))/10 {
		t.Errorf("Merge of %d events: %.0f allocations, want far fewer than one per event", len(log), a)
	}
	merged := Merge(log)
	if got, want := History(merged), History(log); len(got) != 2000 || !reflect.DeepEqual(got, want) {
		t.Errorf("History of the merged log: %d tenures, want 2000 and the same as from the log itself", len(got))
	}
}
