package audit

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"
	"unsafe"

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

// TestMergeCopiesEachEventOnce: merging a log copies each event once, into
// its result; the sort works on where each goes, not on copies of the
// events (some hundred bytes each) as it did. Measured: 529 bytes per
// event in all (the result, the places, the id maps), 728 before.
func TestMergeCopiesEachEventOnce(t *testing.T) {
	log := bigLog(5000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	merged := Merge(log)
	runtime.ReadMemStats(&after)
	per := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(log))
	size := float64(unsafe.Sizeof(publish.Event{}))
	t.Logf("Merge allocated %.0f bytes per event (an event is %.0f)", per, size)
	if limit := 2.75 * size; per > limit {
		t.Errorf("Merge allocated %.0f bytes per event, want under %.0f: the result (%.0f each), the sort's places and the id maps, and no second copy", per, limit, size)
	}
	runtime.KeepAlive(merged)
}

// TestReaderSharesRepeatedStrings: the events read from a log share one
// copy of each group, source, type, id and node name, where each event
// held its own: a log of millions names a few thousand groups and owners.
func TestReaderSharesRepeatedStrings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	s, err := New(path, quiet())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, bigLog(2)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := ReadAll(ctx, path, nil)
	if err != nil || len(evs) != 8 {
		t.Fatalf("read %d events (%v), want 8", len(evs), err)
	}
	same := func(what, a, b string) {
		t.Helper()
		if a != b || unsafe.StringData(a) != unsafe.StringData(b) {
			t.Errorf("%s %q and %q: not one shared copy", what, a, b)
		}
	}
	// bigLog: a's acquire, a's release, b's acquire, b's release, ...
	same("group", evs[0].Group, evs[4].Group)
	same("source", evs[0].Source, evs[7].Source)
	same("type", string(evs[0].Type), string(evs[2].Type))
	same("owner id", evs[0].Owner.ID, evs[2].Owner.ID)
	same("node", evs[0].Owner.Node, evs[1].Previous.Node)
}
