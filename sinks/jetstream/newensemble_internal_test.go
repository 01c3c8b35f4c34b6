package jetstream

import "testing"

// TestStepNewEnsemble: the bucket takes a new ensemble's snapshot for the
// group's state although its term (or zxid) is below the value's.
func TestStepNewEnsemble(t *testing.T) {
	v := step(view{}, gain("a", 600))
	b := gain("b", 5)
	if got := step(v, b); got.owner.Owner.Node != "a" {
		t.Fatalf("an unmarked lower term replaced the owner: %+v", got.owner)
	}
	b.Snapshot, b.Gap, b.NewEnsemble = true, true, true
	if got := step(v, b.WithID()); got.owner == nil || got.owner.Owner.Node != "b" || !got.owner.NewEnsemble {
		t.Fatalf("after a new ensemble's snapshot of b: %+v", got.owner)
	}
	empty := emptySnapshot(3)
	empty.Gap, empty.NewEnsemble = true, true
	if got := step(v, empty.WithID()); got.owner != nil || got.zxid != 3 {
		t.Fatalf("after a new ensemble's empty snapshot: %+v", got)
	}
}
