package integration_test

import (
	"os"
	"testing"
	"time"
)

// TestChaosSharedGroupMix (HERALD_CHAOS=1, make chaos): the random mixes
// of TestSharedGroupMix, two participants of every kind, for a minute
// (HERALD_CHAOS_DURATION sets how long): herald beside Curator, Kazoo,
// go-zookeeper and the classic recipe never lets two own at once, never
// leaves a group without an owner longer than mixGap, and every
// participant keeps getting its turn. It prints each one's count.
func TestChaosSharedGroupMix(t *testing.T) {
	if os.Getenv("HERALD_CHAOS") != "1" {
		t.Skip("chaos test: set HERALD_CHAOS=1 (make chaos); HERALD_CHAOS_DURATION sets how long (default 1m)")
	}
	duration := time.Minute
	if v := os.Getenv("HERALD_CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("HERALD_CHAOS_DURATION=%q: want a positive Go duration such as 90s or 5m", v)
		}
		duration = d
	}
	env := newSharedEnv(t, true, true, true)
	mixGroups(t, env, duration, 2)
}
