package jetstream

import (
	"testing"

	"github.com/zkherald/herald/publish"
)

func by(e publish.Event, src string) publish.Event { e.Source = src; return e }

// A value names the bridge that wrote or last re-stated it: the one whose
// heartbeats confirm it.
func TestStepTakesOverTheSource(t *testing.T) {
	v := step(view{}, by(gain("a", 10), "b1"))
	again := step(v, by(gain("a", 10), "b2"))
	if again.owner == nil || again.owner.Source != "b2" || same(v, again) {
		t.Fatalf("owner re-stated by b2: %+v, want it written again under b2", again.owner)
	}
	if v2 := step(v, by(gain("a", 10), "b1")); !same(v, v2) {
		t.Fatal("the same bridge re-stating its value must not write it again")
	}
	if v2 := step(v, by(gain("z", 5), "b2")); v2.owner.Source != "b1" {
		t.Fatal("a stale event took the value over")
	}

	marker := step(v, by(loss("a", 10, ""), "b1"))
	if marker.owner != nil || marker.source != "b1" || !marker.written {
		t.Fatalf("loss: %+v, want a marker by b1", marker)
	}
	taken := step(marker, by(emptySnapshot(20), "b2"))
	if taken.owner != nil || taken.source != "b2" || same(marker, taken) || taken.guard < marker.guard {
		t.Fatalf("no owner re-stated by b2: %+v, want the marker written again under b2", taken)
	}
	if fresh := step(view{}, by(emptySnapshot(20), "b2")); fresh.written || fresh.source != "" || !same(view{}, fresh) {
		t.Fatalf("a group never written got a marker: %+v", fresh)
	}
}
