package kafkasink

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/publish"
)

// staleness judges the values a stream delivers with the bridges'
// heartbeats, and delivers a value again when only its judgement changes
// (a heartbeat arrived, a bound passed, or another bridge re-stated it;
// see refresh). It is used by the stream's run goroutine only.
type staleness[T any] struct {
	beat chan struct{} // a heartbeat changed the table
	// judge says how fresh v, the value of group key, is at now.
	judge func(key string, v T, now time.Time) publish.Freshness
	get   func(v T) publish.Freshness
	set   func(v T, f publish.Freshness) T
	// again: deliver values again when their judgement changes.
	again bool
	last  map[string]T // by group: the last value delivered
	timer *time.Timer  // fires when the first fresh value turns stale
	next  time.Time    // when timer fires (zero: stopped)
}

func newStaleness[T any]() *staleness[T] {
	st := &staleness[T]{beat: make(chan struct{}, 1), last: map[string]T{}, timer: time.NewTimer(time.Hour)}
	st.timer.Stop()
	return st
}

// ownersStaleness judges owner updates: by the bridges that re-stated the
// group's current state, as the follower saw them, or (Unfiltered) by the
// record's own source.
func ownersStaleness(o followOpts) *staleness[OwnerUpdate] {
	st := newStaleness[OwnerUpdate]()
	st.again = !o.unfiltered
	st.judge = func(group string, u OwnerUpdate, now time.Time) publish.Freshness {
		switch {
		case u.Event.Type == "":
			return publish.Freshness{} // a tombstone herald did not write
		case o.unfiltered:
			return o.follower.Bridges().JudgeGroup(now, group, u.Event.Source)
		}
		return o.follower.Freshness(group, now)
	}
	st.get = func(u OwnerUpdate) publish.Freshness { return u.Freshness }
	st.set = func(u OwnerUpdate, f publish.Freshness) OwnerUpdate { u.Freshness = f; return u }
	return st
}

// judged returns v judged now, remembered to be judged again later.
func (st *staleness[T]) judged(key string, v T) T {
	fr := st.judge(key, v, time.Now())
	v = st.set(v, fr)
	if st.again {
		st.last[key] = v
		st.armBefore(fr.StaleAt)
	}
	return v
}

func (st *staleness[T]) armBefore(at time.Time) {
	if !at.IsZero() && (st.next.IsZero() || at.Before(st.next)) {
		st.next = at
		// A little after the bound, so that the value is stale when judged.
		st.timer.Reset(time.Until(at) + 5*time.Millisecond)
	}
}

// refresh judges again the last value of group only (when not ""), or of
// every group, and sends on c those whose judgement changed: stale or
// fresh, the bridge that confirms it, or that bridge's state (a value read
// before its bridge's first heartbeat is sent again, confirmed, when that
// heartbeat comes); a heartbeat that only moves Confirmed on sends
// nothing. After a full refresh the timer is armed for the next value to
// turn stale.
func (st *staleness[T]) refresh(ctx context.Context, c chan<- T, only string) error {
	if !st.again {
		return nil
	}
	now := time.Now()
	var next time.Time
	for key, v := range st.last {
		if only != "" && key != only {
			continue
		}
		fr := st.judge(key, v, now)
		changed := fr.Differs(st.get(v))
		v = st.set(v, fr)
		st.last[key] = v
		if changed {
			select {
			case c <- v:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if !fr.StaleAt.IsZero() && (next.IsZero() || fr.StaleAt.Before(next)) {
			next = fr.StaleAt
		}
	}
	if only != "" {
		st.armBefore(next)
		return nil
	}
	st.next = time.Time{}
	st.timer.Stop()
	st.armBefore(next)
	return nil
}

// followBridges reads the bridges topic: the heartbeats it holds now are
// given to bridges before it returns, later ones as they come, each
// signalled on beat, as is a tombstone that deletes one (Bridges.Removed).
// Without the topic (no bridge has written a heartbeat yet) it returns at
// once and looks for the topic now and then: values are not judged until
// a heartbeat arrives. Its goroutines join wg and end with ctx.
func followBridges(ctx context.Context, cfg Config, bridges *publish.Bridges, beat chan struct{}, wg *sync.WaitGroup) error {
	signal := func() {
		select {
		case beat <- struct{}{}:
		default:
		}
	}
	got := func(h publish.Heartbeat) {
		if bridges.Put(h) {
			signal()
		}
	}
	gone := func(source string, at time.Time) {
		if bridges.Removed(source, at) {
			signal()
		}
	}
	reach := &bridgesReach{topic: cfg.BridgesTopic, bridges: bridges, changed: signal, down: map[int]error{}}
	parts, ends, err := partitionsAndEnds(ctx, cfg, cfg.BridgesTopic, "")
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// No topic yet: no bridge wrote a heartbeat, values go unjudged.
		// A topic that cannot be read now (its leader down, the brokers
		// unreachable) makes values without a heartbeat stale.
		reach.set(-1, unlessMissing(err))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for wait := 500 * time.Millisecond; ; wait = min(2*wait, 10*time.Second) {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
				parts, ends, err := partitionsAndEnds(ctx, cfg, cfg.BridgesTopic, "")
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					reach.set(-1, unlessMissing(err))
					continue
				}
				// Readable once the heartbeats stored now are in the
				// table, so that no value is judged without them.
				select {
				case <-readBridges(ctx, cfg, parts, ends, got, gone, reach, wg):
					reach.set(-1, nil)
				case <-ctx.Done():
				}
				return
			}
		}()
		return nil
	}
	initial := readBridges(ctx, cfg, parts, ends, got, gone, reach, wg)
	select {
	case <-initial:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// readBridges reads every partition of the bridges topic from the start,
// giving got each heartbeat and gone the source and time of each
// tombstone; the channel it returns closes once the records up to ends
// are read.
func readBridges(ctx context.Context, cfg Config, parts []int, ends map[int]int64, got func(publish.Heartbeat), gone func(string, time.Time), reach *bridgesReach, wg *sync.WaitGroup) <-chan struct{} {
	initial := make(chan struct{})
	var pending atomic.Int64
	for _, end := range ends {
		if end > 0 {
			pending.Add(1)
		}
	}
	if pending.Load() == 0 {
		close(initial)
	}
	for _, p := range parts {
		end := ends[p]
		reached := func() {
			if end > 0 {
				end = 0
				if pending.Add(-1) == 0 {
					close(initial)
				}
			}
		}
		pr := &partRead{cfg: cfg, topic: cfg.BridgesTopic, p: p, again: true,
			got: func(m kafka.Message) bool {
				if m.Value == nil && len(m.Key) > 0 {
					// A tombstone: the heartbeat deleted (by hand or a
					// tool, when its bridge was taken down). Its bridge's
					// values are confirmed by nothing now, and say so,
					// rather than pass unjudged as those of a bridge that
					// never sent a heartbeat. The key is the source, as
					// WriteHeartbeat writes it.
					gone(string(m.Key), m.Time)
				} else if h, err := publish.DecodeHeartbeat(m.Value); err == nil && h.Source == string(m.Key) {
					got(h)
				} else {
					cfg.Logger.Debug("kafkasink: skipping a record of the bridges topic that is not a heartbeat", "partition", m.Partition, "offset", m.Offset)
				}
				if end > 0 && m.Offset+1 >= end {
					reached()
				}
				return true
			},
			// The end to read to first was the old topic's.
			restart: reached,
			reach:   func(err error) { reach.set(p, err) },
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = pr.run(ctx) // read again whenever made again: ends with ctx
		}()
	}
	return initial
}

// unlessMissing is err unless it says that the topic does not exist (or
// has no partitions yet): no bridge has written a heartbeat.
func unlessMissing(err error) error {
	if err == nil || errors.Is(err, kafka.UnknownTopicOrPartition) || errors.Is(err, errNoPartitions) {
		return nil
	}
	return err
}

// bridgesReach tells the heartbeats table when this reader cannot read the
// bridges topic (Bridges.SetUnreadable): while the topic cannot be looked
// up (partition -1), or any partition can be neither read nor asked where
// it ends, a heartbeat that goes quiet says nothing about its bridge, and
// a value whose bridge has no heartbeat in hand is stale. It is shared by
// the partition reads.
type bridgesReach struct {
	topic   string
	bridges *publish.Bridges
	changed func()

	mu    sync.Mutex
	down  map[int]error // by partition: why it cannot be read now
	since time.Time     // when the first of them could not
}

func (r *bridgesReach) set(partition int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.down, partition)
	} else {
		r.down[partition] = err
	}
	var why error
	switch {
	case len(r.down) == 0:
		r.since = time.Time{}
	default:
		if r.since.IsZero() {
			r.since = time.Now()
		}
		// The lowest partition's error, so that the text changes only
		// when the outage does.
		low := -1
		for p := range r.down {
			if low < 0 || p < low {
				low = p
			}
		}
		why = fmt.Errorf("this reader has not been able to read the bridges topic %s from Kafka since %s: %v", r.topic, r.since.UTC().Format(time.RFC3339), r.down[low])
	}
	if r.bridges.SetUnreadable(why) {
		r.changed()
	}
}
