package main

import (
	"sync"

	"github.com/zkherald/herald/publish"
)

// kafkaHeads is where each pass of history's over the events topic found
// each group's records beginning, per partition. The first pass reads
// every record; records dropped after it (retention, a deletion of
// records) took from a later pass only the groups whose first records a
// later pass no longer found: those are marked. Asked instead whether
// the partitions dropped their oldest records, a batch marked GAP maybe
// every group whose events begin with a change, those the dropped
// records held nothing of too
// (TestHistoryFromKafkaInPassesDoesNotMarkAGroupTheDroppedRecordsHeldNothingOf);
// and asked after the batch's pass, records dropped after the pass had
// read them counted as lost
// (TestHistoryFromKafkaDoesNotMarkAGroupWhoseRecordsWereDroppedAfterTheyWereRead).
type kafkaHeads struct {
	mu     sync.Mutex
	passes int
	first  map[string]map[int]int64 // the first pass's: group → partition → offset
	cur    map[string]map[int]int64 // the current pass's, after the first
	low    map[int]int64            // the first pass's lowest offset per partition
}

// begin notes that a pass begins.
func (h *kafkaHeads) begin() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.passes++
	if h.passes > 1 {
		h.cur = map[string]map[int]int64{}
	}
}

// saw notes a record of group g at offset off of partition p, read by
// the current pass; only the first record of each group counts.
func (h *kafkaHeads) saw(g string, p int, off int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.passes > 1 {
		noteFirst(h.cur, g, p, off)
		return
	}
	if h.first == nil {
		h.first, h.low = map[string]map[int]int64{}, map[int]int64{}
	}
	noteFirst(h.first, g, p, off)
	if low, ok := h.low[p]; !ok || off < low {
		h.low[p] = off
	}
}

func noteFirst(m map[string]map[int]int64, g string, p int, off int64) {
	parts := m[g]
	if parts == nil {
		parts = map[int]int64{}
		m[g] = parts
	}
	if _, ok := parts[p]; !ok {
		parts[p] = off
	}
}

// trimmed reports whether the topic had dropped its oldest records when
// the first pass read it: a partition it read began above offset 0, or
// one it found nothing in starts above 0 now (starts:
// kafkasink.EventsStarts). Before a pass, whether one starts above 0.
// Asked of the partitions' starts alone after the first batch's pass,
// records deleted after the first pass read them said so, and every
// group whose events begin with a change was GAP maybe
// (TestHistoryFromKafkaWhoseHeadWasDroppedAfterItWasReadDoesNotMarkIt).
func (h *kafkaHeads) trimmed(starts map[int]int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for p, start := range starts {
		low, read := h.low[p]
		if read && low > 0 || !read && start > 0 {
			return true
		}
	}
	return false
}

// lost reports whether the current pass, after the first, did not find
// group g's first record of a partition where the first pass did. One
// found below it is of a topic deleted and made again (its offsets begin
// at 0 again), and what the first pass found is gone too: taken as
// nothing lost, its tenures were missing without a mark
// (TestHistoryFromKafkaInPassesMarksAGroupOfATopicMadeAgainBetweenThem).
func (h *kafkaHeads) lost(g string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.passes < 2 {
		return false
	}
	for p, off := range h.first[g] {
		if cur, ok := h.cur[g][p]; !ok || cur != off {
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
// records the pass that read them no longer found (kafkaHeads.lost), and
// reports whether it marked one.
func (a *app) markKafkaLost(events []publish.Event) bool {
	marked := false
	for i := range events {
		if i > 0 && events[i].Group == events[i-1].Group {
			continue
		}
		if a.heads().lost(events[i].Group) {
			events[i].Gap, marked = true, true
		}
	}
	return marked
}
