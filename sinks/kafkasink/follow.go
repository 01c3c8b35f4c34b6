package kafkasink

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/publish"
)

// FollowOption configures Events and FollowOwners.
type FollowOption func(*followOpts) error

type followOpts struct {
	follower   *publish.Follower
	unfiltered bool
	keys       func(key string) bool
	onSkipped  func(m kafka.Message, err error)
	at         func(key string, partition int, offset int64)
}

// WithFollower makes the stream judge events with f (to share it, or to
// read its Current state); by default each stream has its own.
func WithFollower(f *publish.Follower) FollowOption {
	return func(o *followOpts) error {
		if f == nil {
			return fmt.Errorf("%w: WithFollower(nil)", ErrBadConfig)
		}
		o.follower = f
		return nil
	}
}

// Unfiltered delivers every record, duplicates and stale ones included
// (for audits and `herald history`, which deduplicate themselves).
func Unfiltered() FollowOption {
	return func(o *followOpts) error { o.unfiltered = true; return nil }
}

// Keys reads only the records whose key (their group: every record of
// herald's topics is keyed by it) keep accepts; the others are passed over
// before they are decoded (`herald history` reading a batch of groups).
func Keys(keep func(key string) bool) FollowOption {
	return func(o *followOpts) error {
		if keep == nil {
			return fmt.Errorf("%w: Keys(nil)", ErrBadConfig)
		}
		o.keys = keep
		return nil
	}
}

// At hands f the key, partition and offset of each record read, of any
// group, before the group asked for or Keys passes it over: `herald
// history` notes where the partitions and each group's records began,
// to tell which groups lost their first records when the partitions drop
// their oldest between its reads.
func At(f func(key string, partition int, offset int64)) FollowOption {
	return func(o *followOpts) error {
		if f == nil {
			return fmt.Errorf("%w: At(nil)", ErrBadConfig)
		}
		o.at = f
		return nil
	}
}

// OnSkipped hands f each record that is no herald event (or owner), with
// why, instead of logging a warning (a reader that reads a topic more than
// once warns of each such record once).
func OnSkipped(f func(m kafka.Message, err error)) FollowOption {
	return func(o *followOpts) error {
		if f == nil {
			return fmt.Errorf("%w: OnSkipped(nil)", ErrBadConfig)
		}
		o.onSkipped = f
		return nil
	}
}

// Stream is a live read of one of herald's topics, every partition (or the
// one holding the group asked for) from the beginning. Values arrive on C,
// which closes when the stream ends; Err then says why.
type Stream[T any] struct {
	c      chan T
	synced chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	// skipped counts the records that were no herald event (or owner).
	skipped atomic.Uint64
}

// Skipped counts the records of the group read that were left out, each
// with a WARN, because they are no herald event (or owner): written by
// hand, or by another tool. A group whose only record is such has no
// update at all, which says nothing of its owner.
func (s *Stream[T]) Skipped() uint64 { return s.skipped.Load() }

// C delivers the stream's values in order per group.
func (s *Stream[T]) C() <-chan T { return s.c }

// Synced is closed once every record present when the stream started has
// been read: what came before is the state at start, what follows is live.
func (s *Stream[T]) Synced() <-chan struct{} { return s.synced }

// Err returns why the stream ended, once C is closed.
func (s *Stream[T]) Err() error {
	<-s.done
	return s.err
}

// Close stops the stream and waits for it.
func (s *Stream[T]) Close() error {
	s.cancel()
	<-s.done
	return nil
}

// Events streams herald.events: each change once (a change published twice,
// say by a restarted bridge, is dropped by a publish.Follower), in order per
// group. group "" means every group.
func Events(ctx context.Context, cfg Config, group string, opts ...FollowOption) (*Stream[publish.Event], error) {
	return follow(ctx, cfg, cfg.withDefaults().EventsTopic, group, opts,
		func(m kafka.Message) (publish.Event, publish.Event, bool, error) {
			e, err := decodeEvent(m)
			return e, e, err == nil, err
		}, nil)
}

// FollowOwners streams the compacted herald.owners topic: first the current
// owner of every group (or of group, when not ""), then each change.
//
// Every update says whether it is stale (see publish.Freshness), judged
// with the heartbeats in the bridges topic (herald.bridges), which
// FollowOwners reads before the first update and follows after. A group
// that turns stale, or fresh again, while nothing else changes is
// delivered again with the new flag. With Unfiltered, an update is judged
// by its own record's source and not delivered again.
func FollowOwners(ctx context.Context, cfg Config, group string, opts ...FollowOption) (*Stream[OwnerUpdate], error) {
	return follow(ctx, cfg, cfg.withDefaults().OwnersTopic, group, opts,
		func(m kafka.Message) (OwnerUpdate, publish.Event, bool, error) {
			u, err := decodeOwner(m)
			return u, u.Event, err == nil && u.Event.Type != "", err
		}, ownersStaleness)
}

// decoder turns a record into a value and the event the follower judges;
// judge is false when there is no event to judge (deliver as is).
type decoder[T any] func(kafka.Message) (v T, e publish.Event, judge bool, err error)

func follow[T any](ctx context.Context, cfg Config, topic, group string, opts []FollowOption, dec decoder[T], fresh func(followOpts) *staleness[T]) (*Stream[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.warnPlainInClear()
	var o followOpts
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.follower == nil {
		o.follower, _ = publish.NewFollower()
	}
	parts, ends, err := partitionsAndEnds(ctx, cfg, topic, group)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withClusterBrokers(ctx, topic)
	ctx, cancel := context.WithCancel(ctx)
	s := &Stream[T]{c: make(chan T), synced: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	raw := make(chan record)
	failed := make(chan error, len(parts))
	var wg sync.WaitGroup
	var st *staleness[T]
	if fresh != nil {
		// The heartbeats first, so that the first values are judged.
		st = fresh(o)
		if err := followBridges(ctx, cfg, o.follower.Bridges(), st.beat, &wg); err != nil {
			cancel()
			wg.Wait()
			return nil, err
		}
	}
	for _, p := range parts {
		send := func(r record) bool {
			select {
			case raw <- r:
				return true
			case <-ctx.Done():
				return false
			}
		}
		pr := &partRead{cfg: cfg, topic: topic, p: p,
			// The owners topic holds current state: a new one, filled
			// again by the bridge, is read again. The events in a new
			// events topic are not the ones the reader missed.
			again:   fresh != nil,
			got:     func(m kafka.Message) bool { return send(record{m: m}) },
			restart: func() { send(record{restart: true, p: p}) },
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := pr.run(ctx); err != nil {
				failed <- err
			}
		}()
	}
	go func() {
		defer close(s.done)
		defer close(s.c)
		defer wg.Wait()
		defer cancel()
		s.err = s.run(ctx, cfg, raw, failed, ends, group, o, dec, st)
	}()
	return s, nil
}

// record is what a partition's read hands the stream: a record, or word
// that the partition is read again from the start (its topic was made
// again).
type record struct {
	m       kafka.Message
	restart bool
	p       int
}

func (s *Stream[T]) run(ctx context.Context, cfg Config, raw <-chan record, failed <-chan error, ends map[int]int64, group string, o followOpts, dec decoder[T], st *staleness[T]) error {
	pending := 0
	for _, end := range ends {
		if end > 0 {
			pending++
		}
	}
	if pending == 0 {
		close(s.synced)
	}
	var beat <-chan struct{}
	var timer <-chan time.Time
	if st != nil {
		beat, timer = st.beat, st.timer.C
		defer st.timer.Stop()
	}
	for {
		var r record
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-failed:
			return err
		case <-beat:
			if err := st.refresh(ctx, s.c, ""); err != nil {
				return err
			}
			continue
		case <-timer:
			st.next = time.Time{}
			if err := st.refresh(ctx, s.c, ""); err != nil {
				return err
			}
			continue
		case r = <-raw:
		}
		m, last := r.m, false
		switch end := ends[m.Partition]; {
		case r.restart:
			// The end to read to before Synced was the old topic's.
			if ends[r.p] > 0 {
				ends[r.p] = 0
				pending--
				if pending == 0 {
					close(s.synced)
				}
			}
			continue
		case end > 0 && m.Offset+1 >= end:
			ends[m.Partition] = 0
			pending--
			last = pending == 0
		}
		if err := s.deliver(ctx, cfg, m, group, o, dec, st); err != nil {
			return err
		}
		if last {
			close(s.synced)
		}
	}
}

func (s *Stream[T]) deliver(ctx context.Context, cfg Config, m kafka.Message, group string, o followOpts, dec decoder[T], st *staleness[T]) error {
	if o.at != nil {
		o.at(string(m.Key), m.Partition, m.Offset)
	}
	if group != "" && string(m.Key) != group {
		return nil
	}
	if o.keys != nil && !o.keys(string(m.Key)) {
		return nil
	}
	v, e, judge, err := dec(m)
	if err != nil {
		if o.onSkipped != nil {
			o.onSkipped(m, err)
		} else {
			cfg.Logger.Warn("kafkasink: skipping a record that is not a herald event", "err", err)
		}
		s.skipped.Add(1)
		return nil
	}
	if judge && !o.unfiltered && !o.follower.Apply(e) {
		if st != nil {
			// A re-statement (say a takeover's snapshot) may change which
			// bridge confirms the group.
			return st.refresh(ctx, s.c, string(m.Key))
		}
		return nil
	}
	if st != nil {
		v = st.judged(string(m.Key), v)
	}
	select {
	case s.c <- v:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// partitionReader reads one partition of topic from its first offset, as
// the followers do: small batches, short waits.
func (cfg Config) partitionReader(topic string, p int) *kafka.Reader {
	return kafka.NewReader(kafka.ReaderConfig{
		Brokers: cfg.Brokers, Topic: topic, Partition: p, Dialer: cfg.dialer(),
		MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 250 * time.Millisecond,
		StartOffset: kafka.FirstOffset, ReadBackoffMin: 50 * time.Millisecond, ReadBackoffMax: time.Second,
		// A topic found shorter than the offset to read from is one made
		// again: say so (see partRead) rather than wait quietly for it
		// to grow that far.
		OffsetOutOfRangeError: true,
	})
}
