package elect

import (
	"testing"
	"time"
)

// TestResyncPeriodComesSoonerWithFewGroups: with ResyncSooner, a round of
// checks over few groups lasts the floor, not the whole Resync interval;
// over many, as long as the rate allows, up to that interval.
func TestResyncPeriodComesSoonerWithFewGroups(t *testing.T) {
	o := manyOptions{resync: 5 * time.Minute, resyncRate: 33, resyncFloor: 30 * time.Second}
	for _, c := range []struct {
		n    int
		want time.Duration
	}{
		{0, 30 * time.Second},
		{1, 30 * time.Second},
		{990, 30 * time.Second},
		{3300, 100 * time.Second},
		{9900, 5 * time.Minute},
		{100000, 5 * time.Minute},
	} {
		if got := resyncPeriod(o, c.n); got != c.want {
			t.Errorf("a round over %d groups lasts %v, want %v", c.n, got, c.want)
		}
	}
	if got := resyncPeriod(manyOptions{resync: 5 * time.Minute}, 1); got != 5*time.Minute {
		t.Errorf("without ResyncSooner a round lasts %v, want the Resync interval", got)
	}
}
