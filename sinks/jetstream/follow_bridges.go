package jetstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/publish"
)

// startBridges watches the bridges bucket, putting every heartbeat in
// f.bridges and signalling f.beat. It returns once the heartbeats stored
// now are in the table, or at once when the bucket does not exist (no
// bridge wrote a heartbeat yet: values are not judged until one does); the
// watch goes on, re-established as the owners watch is, until ctx ends.
func (f *ownerFollow) startBridges(ctx context.Context) error {
	ready := make(chan struct{})
	var once sync.Once
	go f.watchBridges(ctx, func() { once.Do(func() { close(ready) }) })
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *ownerFollow) watchBridges(ctx context.Context, ready func()) {
	status := f.nc.StatusChanged(nats.CONNECTED, nats.CLOSED, nats.DISCONNECTED, nats.RECONNECTING)
	defer f.nc.RemoveStatusListener(status)
	// A look at the bucket now and then, as for the owners: a bucket
	// made again is read again from its start, not from the sequence the
	// old one had reached.
	stop := make(chan struct{})
	defer close(stop)
	go lookEvery(ctx, stop, f.js, f.cfg.bridgesBucket, &f.beatsRead, &f.beatsGen, f.beatsLooks)
	r := retry{first: f.cfg.first, limit: f.cfg.limit}
	for {
		w, err := f.openBridges(ctx)
		if err != nil && !f.nc.IsConnected() {
			err = f.cutOff()
		}
		f.setUnreadable(bridgesUnreadable(err))
		if err == nil {
			f.downSince = time.Time{}
			err = f.consumeBridges(ctx, w, status, ready, &r)
			_ = w.Stop()
			if err != nil {
				ready()
				return
			}
			continue
		}
		ready() // no bucket (values not judged), or unreadable (stale)
		select {
		case <-ctx.Done():
			return
		case s := <-status:
			if s == nats.CLOSED || f.nc.IsClosed() {
				return
			}
		case <-time.After(r.wait()):
		}
	}
}

// setUnreadable records whether the heartbeats can be read (nil: they
// can) and, when that changes, has the values judged again.
func (f *ownerFollow) setUnreadable(err error) {
	if !f.bridges.SetUnreadable(err) {
		return
	}
	select {
	case f.beat <- struct{}{}:
	default:
	}
}

// cutOff is why the heartbeats cannot be read while this reader's
// connection is down: a heartbeat that goes quiet then says nothing about
// the bridge.
func (f *ownerFollow) cutOff() error {
	if f.downSince.IsZero() {
		f.downSince = time.Now()
	}
	return fmt.Errorf("this reader has been disconnected from NATS since %s (reconnecting)", f.downSince.UTC().Format(time.RFC3339))
}

// bridgesUnreadable is err unless it says that the bridges bucket does
// not exist: no bridge wrote a heartbeat yet, and values go unjudged. A
// bucket that exists and cannot be read now (JetStream without a leader,
// a timeout) makes values without a heartbeat stale (Bridges.SetUnreadable).
func bridgesUnreadable(err error) error {
	if err == nil || errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// openBridges watches the bridges bucket from its start, noting which
// bucket that is (its creation time; zero when the look fails, and the
// next look tells).
func (f *ownerFollow) openBridges(ctx context.Context) (jetstream.KeyWatcher, error) {
	f.beatsRead.Store(0)
	gen := f.beatsGen.Add(1)
	f.beatsCreated = lookBucket(ctx, f.js, f.cfg.bridgesBucket, 0, gen).created
	kv, err := f.js.KeyValue(ctx, f.cfg.bridgesBucket)
	if err != nil {
		return nil, err
	}
	return kv.WatchAll(ctx)
}

// bridgesAgain reports whether a look says the bridges bucket was made
// again since openBridges (a look from before that is ignored).
func (f *ownerFollow) bridgesAgain(l bucketLook) bool {
	if l.gen != f.beatsGen.Load() {
		return false
	}
	switch l.state(f.beatsCreated) {
	case bucketAgain:
		return true
	case bucketSame:
		if f.beatsCreated.IsZero() {
			f.beatsCreated = l.created
		}
	}
	return false
}

// consumeBridges reads one watcher until it should be replaced (nil) or the
// watch must end (an error).
func (f *ownerFollow) consumeBridges(ctx context.Context, w jetstream.KeyWatcher, status chan nats.Status, ready func(), r *retry) error {
	progress := false
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case s := <-status:
			switch {
			case s == nats.CLOSED || f.nc.IsClosed():
				return ErrConnClosed
			case s == nats.DISCONNECTED || s == nats.RECONNECTING:
				f.setUnreadable(f.cutOff())
				continue
			}
			return nil // reconnected: the watcher's consumer may be gone
		case l := <-f.beatsLooks:
			if f.bridgesAgain(l) {
				return nil // made again: read the new one from its start
			}
		case e, ok := <-w.Updates():
			if !ok {
				if !progress {
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-time.After(r.wait()):
					}
				}
				return nil
			}
			progress = true
			r.reset()
			if e == nil {
				ready()
				continue
			}
			if e.Revision() > f.beatsRead.Load() {
				f.beatsRead.Store(e.Revision())
			}
			if e.Operation() != jetstream.KeyValuePut {
				// A heartbeat deleted or purged: its bridge's values are
				// confirmed by nothing now, and say so.
				if src, ok := publish.SourceOfBridgeKey(e.Key()); ok && f.bridges.Removed(src, e.Created()) {
					select {
					case f.beat <- struct{}{}:
					default:
					}
				}
				continue
			}
			h, err := publish.DecodeHeartbeat(e.Value())
			if err != nil || publish.BridgeKey(h.Source) != e.Key() {
				continue // not a heartbeat, or filed under another bridge's key
			}
			// A bridge whose clock runs ahead dates its heartbeats in the
			// future, and they would keep its values fresh that much
			// longer after it died: no heartbeat is younger than the
			// server's record of it.
			if c := e.Created(); !c.IsZero() && h.Time.After(c) {
				h.Time = c
			}
			if f.bridges.Put(h) {
				select {
				case f.beat <- struct{}{}:
				default:
				}
			}
		}
	}
}
