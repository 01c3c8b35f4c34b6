package audit

import (
	"testing"
	"time"
)

func TestRoundHeld(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{
		{2747546373 * time.Nanosecond, 2748 * time.Millisecond},
		{33180598 * time.Nanosecond, 33200 * time.Microsecond},
		{3723400 * time.Millisecond, 3723 * time.Second},
		{1500 * time.Nanosecond, 2 * time.Microsecond},
	} {
		if got := roundHeld(c.in); got != c.want {
			t.Errorf("roundHeld(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
