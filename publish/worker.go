package publish

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// work is a sink's single worker: it writes the backlog in batches, front
// first, and retries a failed batch, whole, until it is stored.
func (p *Pipeline) work(l *lane) {
	l.busy.Store(true)
	defer p.wg.Done()
	defer l.busy.Store(false)
	b := p.newBackoff()
	connected, again := false, false
	var check <-chan time.Time
	if _, ok := l.sink.(StoreChecker); ok && p.cfg.storeCheck > 0 {
		t := time.NewTicker(p.cfg.storeCheck)
		defer t.Stop()
		check = t.C
	}
	for {
		batch, epoch := l.take(p.cfg.batchSize)
		if batch == nil {
			select {
			case <-l.wake:
				continue
			case <-check:
				if connected || again {
					again = p.checkStore(l, &connected, again && !connected)
				}
				continue
			case <-p.draining:
				// Close was called: stop once nothing is pending. Publish
				// is refused by now, so the backlog only shrinks.
				if l.size() == 0 {
					return
				}
				continue
			case <-p.hardCtx.Done():
				return
			}
		}
		if !p.deliver(l, batch, epoch, &connected, b) {
			return // stopped; the batch stays counted as in flight
		}
	}
}

// gatePoll is how often a write the gate (WithWriteGate) holds asks again.
const gatePoll = 50 * time.Millisecond

// gateOpen asks the write gate whether l's sink may be written now (yes
// without a gate, and for a Private sink). Its caller looks whether the
// batch was dropped after asking: the gate may take a round trip.
func (p *Pipeline) gateOpen(l *lane) bool {
	if p.cfg.gate == nil || l.private {
		return true
	}
	ctx, cancel := context.WithTimeout(p.hardCtx, 10*time.Second)
	defer cancel()
	return p.cfg.gate(ctx) == nil
}

// errStale: a batch's epoch ended (Pause) before its write began.
var errStale = errors.New("publish: paused before the write")

// write writes batch to l's sink unless Pause ended its epoch first,
// counted in writing while it runs: from Pause on, AwaitWrites sees every
// write that can still land (one that began after the epoch ended sees it
// ended, and does not begin).
func (p *Pipeline) write(ctx context.Context, l *lane, batch []Event, epoch uint64) error {
	p.writing.Add(1)
	defer p.writing.Add(-1)
	if l.stale(epoch) {
		return errStale
	}
	return l.sink.Write(ctx, batch)
}

// AwaitWrites waits, after Pause, until no write of any sink is under way
// (a write begun before the Pause lands or fails first), or ctx ends; it
// reports whether none is. A deposed HA bridge calls it before it hands
// its election over, so that a slow write of its own (a Kafka produce
// retried inside its client) does not land after its successor's newer
// ones. A write a server holds past the client's timeout may still land
// later: only the server could fence it.
func (p *Pipeline) AwaitWrites(ctx context.Context) bool {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for p.writing.Load() > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// newBackoff returns the retry schedule. MaxElapsedTime is 0 on purpose:
// a sink that is down must not make herald give up on it. Giving up would
// either drop events (a hole in a group's history that no consumer could
// detect) or stop the sink for good; instead the backlog grows, collapses
// when bounded, and shows in herald_backlog and Stats, and the retries wait
// at most MaxInterval so recovery is noticed promptly.
func (p *Pipeline) newBackoff() *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = p.cfg.initial
	b.MaxInterval = p.cfg.maxBackoff
	b.MaxElapsedTime = 0
	b.Clock = p.cfg.clock
	b.Reset()
	return b
}

// deliver writes one batch until the sink stores it, connecting first when
// needed. It reconnects after every error, not only ErrReconnect: a sink
// that failed is not trusted to be usable, and Connect must be safe to call
// again. It returns false when the pipeline is being stopped.
func (p *Pipeline) deliver(l *lane, batch []Event, epoch uint64, connected *bool, b *backoff.ExponentialBackOff) bool {
	ctx := p.hardCtx
	for {
		switch open := p.gateOpen(l); {
		case ctx.Err() != nil:
			return false
		case l.stale(epoch):
			l.abandon(batch) // the caller stopped publishing (Pause)
			return true
		case !open:
			if !p.sleep(gatePoll) {
				return false
			}
			continue
		}
		var err error
		if !*connected {
			// A restatement is queued behind the batch retried below,
			// and every other event the sink has pending.
			if err = p.connect(ctx, l, connected); err == nil {
				continue // a connect takes time: ask the gate again
			}
		}
		if err == nil {
			if err = p.write(ctx, l, batch, epoch); errors.Is(err, errStale) {
				continue // paused since the gate opened: dropped above
			}
			if err == nil {
				b.Reset()
				l.ack(batch, p.cfg.clock)
				p.delivers(l)
				return true
			}
			var rej *RejectedError
			if errors.As(err, &rej) && rej.Index >= 0 && rej.Index < len(batch) {
				// The front was stored, one event can never be: drop it
				// from this sink, and write the rest at once.
				b.Reset()
				left := len(batch) - rej.Index - 1
				l.settle(batch[:rej.Index], left+1, p.cfg.clock)
				if e := batch[rej.Index]; l.reject(e, rej.Err, left, batch[rej.Index+1:]) && p.cfg.log != nil {
					p.cfg.log.Warn("the sink refused an event for good: the group's value there is the one before it, not confirmed, until the group's next event is stored there, with gap=true",
						"sink", l.name, "group", e.Group, "event", e.ID, "type", e.Type, "err", rej.Err)
				}
				p.delivers(l)
				batch = batch[rej.Index+1:]
				if len(batch) == 0 {
					return true
				}
				continue
			}
		}
		if ctx.Err() != nil {
			return false
		}
		*connected = false
		l.failed(err)
		if !l.c.failing.Swap(true) && p.cfg.log != nil {
			p.cfg.log.Warn("sink cannot deliver; its events wait in its backlog, retried until it can",
				"sink", l.name, "backlog", l.size(), "err", err)
		}
		wait := b.NextBackOff()
		if wait == backoff.Stop { // cannot happen with MaxElapsedTime 0; be safe
			wait = p.cfg.maxBackoff
		}
		if !p.waitRetry(l, wait) {
			return false
		}
	}
}

// connect connects l's sink and, when it says it lost its store of
// current state (StateKeeper), queues every group's state for it.
func (p *Pipeline) connect(ctx context.Context, l *lane, connected *bool) error {
	if err := l.sink.Connect(ctx); err != nil {
		return err
	}
	*connected = true
	l.c.connected.Store(true)
	if sk, ok := l.sink.(StateKeeper); ok && sk.StateLost() {
		p.restate(l)
	}
	return nil
}

// storeCheckTimeout bounds one look of an idle sink at its store.
const storeCheckTimeout = 10 * time.Second

// checkStore asks l's idle sink whether its store of current state is
// still there (StoreChecker). When it is not, the sink is connected again,
// which makes the store again and queues every group's state for it;
// retry skips the look, for a store found gone whose Connect failed. It
// returns whether that Connect failed, so that the next tick tries again:
// an idle sink has no write to retry it.
func (p *Pipeline) checkStore(l *lane, connected *bool, retry bool) (again bool) {
	if !retry {
		ctx, cancel := context.WithTimeout(p.hardCtx, storeCheckTimeout)
		gone := l.sink.(StoreChecker).StoreGone(ctx)
		cancel()
		if !gone {
			return false
		}
	}
	*connected = false
	if err := p.connect(p.hardCtx, l, connected); err != nil {
		if p.hardCtx.Err() == nil {
			l.failed(err)
		}
		return true
	}
	return false
}

// reconnectPoll is how often a sink whose connection is down is asked
// whether it is back, while its retry waits.
const reconnectPoll = 50 * time.Millisecond

// waitRetry waits d before the next try. A sink that says its connection
// is down (ConnState) is tried again as soon as it says it is back: the
// backoff, grown while it was down, must not keep its backlog waiting.
func (p *Pipeline) waitRetry(l *lane, d time.Duration) bool {
	cs, ok := l.sink.(ConnState)
	if !ok || cs.Connected() {
		return p.sleep(d)
	}
	for d > 0 {
		step := min(d, reconnectPoll)
		if !p.sleep(step) {
			return false
		}
		d -= step
		if cs.Connected() {
			return true
		}
	}
	return true
}

// delivers records that the sink stored events: it is no longer failing.
func (p *Pipeline) delivers(l *lane) {
	if l.c.failing.Swap(false) && p.cfg.log != nil {
		p.cfg.log.Info("sink delivers again", "sink", l.name, "backlog", l.size())
	}
}

func (p *Pipeline) sleep(d time.Duration) bool {
	select {
	case <-p.cfg.clock.After(d):
		return true
	case <-p.hardCtx.Done():
		return false
	}
}
