package jetstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/publish"
)

// ErrConnClosed ends a Follow or Events whose NATS connection closed for
// good.
var ErrConnClosed = errors.New("jetstream: NATS connection closed")

// OwnerUpdate is the owner of one group as the owners bucket reports it.
type OwnerUpdate struct {
	Group string
	// Owner is the current owner; nil when the group has none.
	Owner *Owner
	// Revision is the bucket's revision of this value (0 for the "no owner"
	// Follow reports for a group the bucket has never held).
	Revision uint64
	// Initial is true for the values delivered first: the state when Follow
	// started.
	Initial bool
	// Freshness says whether the bridge that wrote the value (the owner's
	// Source, or the bridge that wrote the "no owner" marker), or one of
	// its HA election, still confirms it, from the heartbeats in the
	// bridges bucket: Stale is true once none has confirmed it within its
	// bound, or the one that would said it stopped. When only that
	// changes, Follow delivers the value again (same Revision) with the
	// new Stale.
	publish.Freshness
}

// OwnerWatch delivers owner updates until its context ends or its
// connection closes; then Updates is closed and Err says why.
type OwnerWatch struct {
	ch      chan OwnerUpdate
	synced  chan struct{}
	skipped atomic.Uint64

	mu  sync.Mutex
	err error
}

// Updates delivers the current value of every followed group first, then
// every change, in revision order per group. A group whose key was deleted
// has no owner (Owner nil).
func (w *OwnerWatch) Updates() <-chan OwnerUpdate { return w.ch }

// Synced is closed once the initial values are all on Updates.
func (w *OwnerWatch) Synced() <-chan struct{} { return w.synced }

// Err is why Updates closed (the context's error, or ErrConnClosed); nil
// while it is open.
func (w *OwnerWatch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Skipped counts bucket values that were not herald owners and were left
// out.
func (w *OwnerWatch) Skipped() uint64 { return w.skipped.Load() }

// Follow watches the owner of group ("" for every group) in the owners
// bucket: the current value first, then every change. The watch survives
// disconnects and server restarts: it is re-established with backoff, and
// catches up on what changed meanwhile without repeating what it delivered.
//
// Every update says whether it is stale (see publish.Freshness), judged
// with the heartbeats in the bridges bucket (herald_bridges, see
// FromBridgesBucket), which Follow reads before the first value and
// watches after. A value that turns stale, or fresh again, while nothing
// else changes is delivered again with the new flag, and so is one first
// delivered before its bridge's first heartbeat once that heartbeat
// confirms it.
func Follow(ctx context.Context, js jetstream.JetStream, group string, opts ...FollowOption) (*OwnerWatch, error) {
	cfg, err := newFollowConfig(opts)
	if err != nil {
		return nil, err
	}
	key := ">"
	if group != "" {
		if key, err = publish.Tokens(group); err != nil {
			return nil, err
		}
	}
	kv, err := js.KeyValue(ctx, cfg.bucket)
	if err != nil {
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, fmt.Errorf("jetstream: no KV bucket %s: start a herald bridge with the JetStream sink first: %w", cfg.bucket, err)
		}
		return nil, fmt.Errorf("jetstream: open KV bucket %s: %w", cfg.bucket, err)
	}
	f := &ownerFollow{
		cfg: cfg, kv: kv, js: js, nc: js.Conn(), group: group, key: key,
		w:       &OwnerWatch{ch: make(chan OwnerUpdate, cfg.buffer), synced: make(chan struct{})},
		known:   map[string]known{},
		bridges: publish.NewBridges(),
		beat:    make(chan struct{}, 1),
		last:    map[string]lastValue{},
		timer:   time.NewTimer(time.Hour),
	}
	f.timer.Stop()
	// The heartbeats first, so that the first values are judged.
	if err := f.startBridges(ctx); err != nil {
		return nil, err
	}
	watcher, err := kv.Watch(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("jetstream: watch %s in %s: %w", key, cfg.bucket, err)
	}
	go f.run(ctx, watcher)
	return f.w, nil
}

// known is what the watch last delivered for a key.
type known struct {
	rev      uint64
	term     int64 // the highest owner term delivered
	has      bool  // the last delivery named an owner
	reported bool  // something was delivered
}

type ownerFollow struct {
	cfg        followConfig
	kv         jetstream.KeyValue
	js         jetstream.JetStream
	nc         *nats.Conn
	group, key string
	w          *OwnerWatch
	known      map[string]known
	synced     bool

	bridges *publish.Bridges
	beat    chan struct{} // a heartbeat changed the table
	// downSince: when this reader's connection went down, zero while the
	// heartbeats watch works (watchBridges' goroutine only).
	downSince time.Time
	last      map[string]lastValue // by key: the last update delivered of a value naming its writer
	timer     *time.Timer          // fires when the first fresh value turns stale
	next      time.Time            // when timer fires (zero: stopped)
}

func (f *ownerFollow) run(ctx context.Context, watcher jetstream.KeyWatcher) {
	status := f.nc.StatusChanged(nats.CONNECTED, nats.CLOSED)
	defer f.nc.RemoveStatusListener(status)
	defer f.timer.Stop()
	err := f.loop(ctx, watcher, status)
	f.w.mu.Lock()
	f.w.err = err
	f.w.mu.Unlock()
	close(f.w.ch)
}

// loop consumes watchers, replacing each one that ends or whose connection
// came back (its consumer may be gone with a restarted server).
func (f *ownerFollow) loop(ctx context.Context, watcher jetstream.KeyWatcher, status chan nats.Status) error {
	r := retry{first: f.cfg.first, limit: f.cfg.limit}
	for {
		if watcher != nil {
			progress, err := f.consume(ctx, watcher, status)
			_ = watcher.Stop()
			if err != nil {
				return err
			}
			watcher = nil
			if progress {
				r.reset()
				if watcher, err = f.kv.Watch(ctx, f.key); err == nil {
					continue
				}
			}
		} else {
			var err error
			if watcher, err = f.kv.Watch(ctx, f.key); err == nil {
				continue
			}
		}
		// The watch could not be made, or ended before delivering
		// anything: wait before the next attempt.
		wait := time.After(r.wait())
	waiting:
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case s := <-status:
				if s == nats.CLOSED || f.nc.IsClosed() {
					return ErrConnClosed
				}
				break waiting
			case <-f.beat:
				if err := f.refresh(ctx); err != nil {
					return err
				}
			case <-f.timer.C:
				f.next = time.Time{}
				if err := f.refresh(ctx); err != nil {
					return err
				}
			case <-wait:
				break waiting
			}
		}
	}
}

// consume delivers one watcher's entries until the watcher should be
// replaced (nil error) or following must end. progress says whether the
// watcher delivered anything.
func (f *ownerFollow) consume(ctx context.Context, watcher jetstream.KeyWatcher, status chan nats.Status) (progress bool, err error) {
	seen := map[string]bool{} // keys in this watcher's replay
	replaying := true
	for {
		select {
		case <-ctx.Done():
			return progress, ctx.Err()
		case s := <-status:
			if s == nats.CLOSED || f.nc.IsClosed() {
				return progress, ErrConnClosed
			}
			return true, nil // reconnected: start a fresh watch at once
		case e, ok := <-watcher.Updates():
			if !ok {
				return progress, nil
			}
			progress = true
			if e == nil { // end of the replay
				replaying = false
				if err := f.endReplay(ctx, seen); err != nil {
					return progress, err
				}
				continue
			}
			if replaying {
				seen[e.Key()] = true
			}
			if err := f.entry(ctx, e, replaying && !f.synced); err != nil {
				return progress, err
			}
		case <-f.beat:
			if err := f.refresh(ctx); err != nil {
				return progress, err
			}
		case <-f.timer.C:
			f.next = time.Time{}
			if err := f.refresh(ctx); err != nil {
				return progress, err
			}
		}
	}
}
