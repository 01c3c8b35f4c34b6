package audit

import (
	"testing"

	"github.com/zkherald/herald/publish"
)

// TestHistoryNewEnsemble: a snapshot from a new ensemble (lower zxids and
// terms than the events before it) comes after them, merged with another
// bridge's log, ends the old owner's tenure unseen, and starts the new
// owner's with a gap; the log's last report is the new ensemble's.
func TestHistoryNewEnsemble(t *testing.T) {
	old := lev(publish.LockAcquired, "a", "", 600, 600, 0, false)
	fresh := lev(publish.LockAcquired, "b", "", 5, 5, 9000, true)
	fresh.Gap, fresh.NewEnsemble = true, true
	fresh = fresh.WithID()
	next := lev(publish.LockReleased, "", "b", 5, 7, 9500, false)
	ts := History(Merge([]publish.Event{old, fresh, next}, []publish.Event{old}))
	if len(ts) != 2 || ts[0].Owner.ID != "a" || ts[0].Open() || ts[1].Owner.ID != "b" || !ts[1].Gap || ts[1].Until != next.Time {
		t.Fatalf("%+v\nwant a ended, then b with a gap, released", ts)
	}
	ts = History(Merge([]publish.Event{old, fresh}))
	if len(ts) != 2 || ts[1].Owner.ID != "b" || !ts[1].Open() {
		t.Fatalf("%+v\nwant b holding last", ts)
	}
}
