package main

import (
	"context"
	"sync"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// kafkaHeads is where each group's records began in the events topic, per
// partition, when history first read them (the first pass, which reads
// every record). Records dropped between passes (retention, a deletion
// of records) took from a later batch only the groups whose records
// began at or below the partition's new start: asked instead whether the
// partitions dropped their oldest records, a later batch marked GAP maybe
// every group whose events begin with a change, those the dropped
// records held nothing of too
// (TestHistoryFromKafkaInPassesDoesNotMarkAGroupTheDroppedRecordsHeldNothingOf).
type kafkaHeads struct {
	mu    sync.Mutex
	first map[string]map[int]int64 // group → partition → offset
}

// saw notes a record of group g at offset off of partition p; the first
// read's stays: a later one sees only what is left.
func (h *kafkaHeads) saw(g string, p int, off int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.first == nil {
		h.first = map[string]map[int]int64{}
	}
	parts := h.first[g]
	if parts == nil {
		parts = map[int]int64{}
		h.first[g] = parts
	}
	if _, ok := parts[p]; !ok {
		parts[p] = off
	}
}

// lost reports whether g's first record in some partition lies below
// that partition's start now (starts: kafkasink.EventsStarts).
func (h *kafkaHeads) lost(g string, starts map[int]int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for p, off := range h.first[g] {
		if start, ok := starts[p]; ok && start > off {
			return true
		}
	}
	return false
}

// heads is the app's kafkaHeads, made at its first use.
func (a *app) heads() *kafkaHeads {
	if a.kafkaHeads == nil {
		a.kafkaHeads = &kafkaHeads{}
	}
	return a.kafkaHeads
}

// markKafkaLost marks as after a gap the first event of each group of
// events (a batch, merged: each group's events together) whose first
// records the events topic dropped since history first read it, and
// reports whether it marked one. It asks the brokers where the
// partitions start now; when they do not answer it marks nothing, as
// before.
func (a *app) markKafkaLost(ctx context.Context, sf *sourceFlags, group string, events []publish.Event) bool {
	cfg, err := sf.kafkaConfig(a.log)
	if err != nil {
		return false
	}
	starts, err := kafkasink.EventsStarts(ctx, cfg, group)
	if err != nil {
		return false
	}
	marked := false
	for i := range events {
		if i > 0 && events[i].Group == events[i-1].Group {
			continue
		}
		if a.heads().lost(events[i].Group, starts) {
			events[i].Gap, marked = true, true
		}
	}
	return marked
}
