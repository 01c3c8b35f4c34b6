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
	// Note, when Owner is nil, is why nobody holds the group, when its
	// bridge said (a node at a leader's path not taken for a leader's);
	// an owner carries its own (Owner.Note).
	Note string
	// Revision is the bucket's revision of this value (0 for the "no owner"
	// Follow reports for a group the bucket has never held). Revisions
	// start over in a bucket deleted and made again.
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
//
// The owners bucket deleted while Follow reads it (by an operator, or
// with its server's store) makes every value delivered stale, delivered
// again with a StaleReason saying the bucket is gone, whatever the
// heartbeats say: nothing confirms a value of a bucket that is gone. Once
// it exists again (a bridge makes it again with its next write, and
// restates every owner), Follow reads it from its start, whose revisions
// start over: its values are delivered (Initial false), and a group
// delivered before that it lacks has no owner (Revision 0). Follow looks
// at the bucket every 2s, and when it reconnects, for this; so does the
// heartbeats' watch, which reads a bridges bucket made again from its
// start.
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
			return nil, fmt.Errorf("jetstream: no KV bucket %s: a herald bridge with the JetStream sink (--nats) makes it when it starts, and again if it was deleted; start or restart one, or check the NATS URL and the bucket name: %w", cfg.bucket, err)
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
		looks:   make(chan bucketLook, 1),

		beatsLooks: make(chan bucketLook, 1),
	}
	f.timer.Stop()
	// The heartbeats first, so that the first values are judged.
	if err := f.startBridges(ctx); err != nil {
		return nil, err
	}
	// Which bucket the watch reads: one made again later has another
	// creation time (zero when the look fails: the next one tells).
	f.created = lookBucket(ctx, js, cfg.bucket, 0, 0).created
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

	// The bucket the watch reads (loop's goroutine): created is when its
	// stream was created; read the highest revision read from it; gen
	// counts the times the follower started over on a bucket made again
	// (a look taken before is about the bucket before). gone says why the
	// values cannot be confirmed while the bucket is missing ("" while it
	// is there); before holds, after starting over, what was delivered
	// from the bucket before, until the new one's replay has ended.
	created time.Time
	read    atomic.Uint64
	gen     atomic.Uint64
	looks   chan bucketLook
	gone    string
	before  map[string]OwnerUpdate
	reopen  bool // the bucket was made again: open it again before watching

	bridges *publish.Bridges
	beat    chan struct{} // a heartbeat changed the table
	// downSince: when this reader's connection went down, zero while the
	// heartbeats watch works (watchBridges' goroutine only).
	downSince time.Time
	// The bridges bucket watched, as created and read for the owners
	// (beatsCreated: watchBridges' goroutine only).
	beatsCreated        time.Time
	beatsRead, beatsGen atomic.Uint64
	beatsLooks          chan bucketLook
	last                map[string]lastValue // by key: the last update delivered of a value naming its writer
	timer               *time.Timer          // fires when the first fresh value turns stale
	next                time.Time            // when timer fires (zero: stopped)
}

func (f *ownerFollow) run(ctx context.Context, watcher jetstream.KeyWatcher) {
	status := f.nc.StatusChanged(nats.CONNECTED, nats.CLOSED)
	defer f.nc.RemoveStatusListener(status)
	defer f.timer.Stop()
	stop := make(chan struct{})
	defer close(stop)
	go lookEvery(ctx, stop, f.js, f.cfg.bucket, &f.read, &f.gen, f.looks)
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
				if watcher, err = f.watch(ctx); err == nil {
					continue
				}
			}
		} else {
			var err error
			if watcher, err = f.watch(ctx); err == nil {
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
			case l := <-f.looks:
				again, err := f.onLook(ctx, l)
				if err != nil {
					return err
				}
				if again {
					break waiting
				}
			case <-wait:
				break waiting
			}
		}
	}
}

// watch makes a new watcher on the bucket, after a look at it: on a bucket
// made again the follower starts over (its replay is all new), and while
// the bucket is missing the values delivered are stale.
func (f *ownerFollow) watch(ctx context.Context) (jetstream.KeyWatcher, error) {
	if _, err := f.onLook(ctx, lookBucket(ctx, f.js, f.cfg.bucket, f.read.Load(), f.gen.Load())); err != nil {
		return nil, err
	}
	if f.reopen {
		kv, err := f.js.KeyValue(ctx, f.cfg.bucket)
		if err != nil {
			return nil, err
		}
		f.kv, f.reopen = kv, false
	}
	return f.kv.Watch(ctx, f.key)
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
		case l := <-f.looks:
			again, err := f.onLook(ctx, l)
			if err != nil {
				return progress, err
			}
			if again {
				return true, nil // a new watch on the new bucket, at once
			}
		}
	}
}

// bucketCheck is how often a follower looks whether a bucket it watches is
// still the one it reads. A watch goes on after the last revision it read:
// on a bucket deleted and made again, whose revisions start over, it would
// wait in silence until the new bucket grew past that, and meanwhile hold
// values of a bucket that is gone as current.
const bucketCheck = 2 * time.Second

// bucketLook is one look at a bucket's stream: when it was created and its
// last sequence, or why it did not answer; gen and read are the follower's
// generation and the highest revision it had read before the look.
type bucketLook struct {
	gen, read uint64
	created   time.Time
	last      uint64
	err       error
}

func lookBucket(ctx context.Context, js jetstream.JetStream, bucket string, read, gen uint64) bucketLook {
	l := bucketLook{gen: gen, read: read}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := js.Stream(cctx, "KV_"+bucket)
	if err != nil {
		l.err = err
		return l
	}
	info := st.CachedInfo()
	l.created, l.last = info.Created, info.State.LastSeq
	return l
}

// lookEvery looks at bucket every bucketCheck until ctx ends or stop is
// closed, and posts each look on out (one that was not taken yet is
// replaced). gen is loaded before read, read before the look: every
// revision read was stored before the stream answers, so its last
// sequence is no lower unless the bucket was made again.
func lookEvery(ctx context.Context, stop <-chan struct{}, js jetstream.JetStream, bucket string, read, gen *atomic.Uint64, out chan bucketLook) {
	t := time.NewTicker(bucketCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-t.C:
		}
		g := gen.Load()
		l := lookBucket(ctx, js, bucket, read.Load(), g)
		select {
		case <-out:
		default:
		}
		select {
		case out <- l:
		default:
		}
	}
}

// bucketState is what a look says about the bucket a follower reads.
type bucketState int

const (
	bucketSame       bucketState = iota // the bucket read
	bucketUnanswered                    // no answer (an outage): nothing is known
	bucketGone                          // no such bucket now
	bucketAgain                         // another bucket of the same name
)

// state judges l against created, the creation time of the bucket read
// (zero when unknown: then only the sequences tell).
func (l bucketLook) state(created time.Time) bucketState {
	switch {
	case errors.Is(l.err, jetstream.ErrStreamNotFound):
		return bucketGone
	case l.err != nil:
		return bucketUnanswered
	case !created.IsZero() && !l.created.Equal(created), l.last < l.read:
		return bucketAgain
	}
	return bucketSame
}

// onLook acts on a look at the owners bucket. A bucket gone makes every
// value delivered stale (delivered again so); one made again makes the
// follower start over on it, and again says the watch must be replaced
// at once. A look from before the follower last started over is about the
// bucket before, and ignored.
func (f *ownerFollow) onLook(ctx context.Context, l bucketLook) (again bool, err error) {
	if l.gen != f.gen.Load() {
		return false, nil
	}
	switch l.state(f.created) {
	case bucketUnanswered:
		return false, nil
	case bucketGone:
		if f.gone != "" {
			return false, nil
		}
		f.gone = fmt.Sprintf("the owners bucket %s is gone (deleted, or its server lost its store): nothing it held is confirmed until a bridge makes it again", f.cfg.bucket)
		return false, f.refresh(ctx)
	case bucketAgain:
		f.startOver(l.created)
		return true, f.refresh(ctx)
	}
	if f.created.IsZero() {
		f.created = l.created
	}
	if f.gone != "" {
		f.gone = "" // back after all (a look that failed so): judge again
		return false, f.refresh(ctx)
	}
	return false, nil
}

// startOver forgets what the follower read from a bucket that was made
// again (revisions, terms: the new bucket's start over) and keeps what it
// delivered, for the new bucket's replay to replace. Meanwhile every value
// delivered from the old bucket is stale (the refresh after this delivers
// it again so): the new bucket says what is current, not the old one's
// bridge's heartbeats. A key delivered before that the new bucket lacks
// at the end of its replay stays stale, with no owner, until a bridge
// writes it again (endBefore).
func (f *ownerFollow) startOver(created time.Time) {
	f.read.Store(0)
	f.gen.Add(1)
	f.created, f.gone, f.reopen = created, "", true
	if f.before == nil {
		f.before = map[string]OwnerUpdate{}
	}
	reason := fmt.Sprintf("the owners bucket %s was made again; reading it afresh", f.cfg.bucket)
	for key, l := range f.last {
		f.before[key] = l.u
		l.pending = reason
		f.last[key] = l
	}
	f.known = map[string]known{}
}
