package main

import (
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// TestOneGroupsEventsAreHeldOnceAsTheReadEnds: one group's history from
// the stream (history GROUP --nats) holds the events read until the read
// ends, then hands them on to the batch. Held whole until the last was
// handed on, the events were in memory twice at that moment. Measured
// there, live beyond what the test binary held before: the batch's events
// (some hundred bytes each) and what is still held; about the batch now
// (under one and a half times), 2.3 times before.
func TestOneGroupsEventsAreHeldOnceAsTheReadEnds(t *testing.T) {
	const n = 40000
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := heap() // what the rest of the test binary holds
	d := &passDeleted{filtered: true, prev: map[string]uint64{}}
	p := &publish.Participant{ID: "alpha", Node: "n_0000000001"}
	at := time.Now().UTC()
	for i := range n {
		d.read(publish.Event{Type: publish.LeaderElected, Group: "/g", Recipe: elect.RecipeElection, Owner: p,
			Term: int64(i), Zxid: int64(i), Time: at, Source: "test"}, uint64(i+1), nil)
	}
	batch := make([]publish.Event, 0, n) // sized: its growth is not what is measured
	var live uint64
	d.handOn(nil, func(e publish.Event) {
		if batch = append(batch, e); len(batch) == n {
			h := heap()
			live = h - min(base, h)
		}
	})
	size := uint64(unsafe.Sizeof(publish.Event{})) * n
	t.Logf("live as the last event was handed on: %.2f times the batch's %d bytes", float64(live)/float64(size), size)
	if live > size*3/2 {
		t.Errorf("live as the last event was handed on: %d bytes, want under %d: the batch's %d and little else", live, size*3/2, size)
	}
	runtime.KeepAlive(batch)
}
