package bridge

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// Heartbeats: the values a bridge writes in the sinks that keep current
// owners (JetStream's KV bucket, Kafka's owners topic) name it as their
// source, and it confirms them with one record per bridge beside them (see
// publish.Heartbeat), written directly, not through the pipeline; the
// audit log keeps the latest one in a file beside it, for the owners it
// leaves holding:
//
//   - "standby" once at start, before any value: a reader then knows this
//     source sends heartbeats, so its values are judged;
//   - "active" every Config.Heartbeat while it observes with a connected
//     session and every group has had its snapshot, save those it cannot
//     read, which the record lists as unconfirmed (at most
//     publish.MaxUnconfirmed; with more, no active record), dated with the
//     time a round began: when it asked ZooKeeper the round trip that
//     ZooKeeper then answered, after which what the session had heard was
//     published; and written to a sink only once every event published
//     before that time is acknowledged (or dropped) by that sink: a sink
//     that lags or is down is not confirmed, and readers see its values go
//     stale;
//   - "standby" at once when it stops publishing (HA leadership lost),
//     "stopped" on a clean stop (before the drain), nothing after Abort (a
//     crash writes nothing either). Every record carries the time of the
//     last active one (Heartbeat.Confirmed).
//
// Each record carries the bridge's HA path: readers take the heartbeat of
// the active bridge of an HA election as confirming the values the others
// of the same election wrote (a standby that takes over republishes only
// what it held for the replay window, not every group).

// Bounds of one heartbeat write: the first (at start, which waits for
// it), and the last (on a clean stop, before the drain, which must not be
// held up by a dead sink), and the others.
const (
	firstTimeout     = 3 * time.Second
	lastTimeout      = time.Second
	heartbeatTimeout = 5 * time.Second
)

// claim is one round of confirmation for a sink: once the sink has settled
// (acknowledged, collapsed or rejected) target events, every event
// published before at is in it.
type claim struct {
	at     time.Time
	target int64
	// unconfirmed is what the bridge could not read at the time, and
	// scope what it confirmed then: the claim is written later, dated at,
	// and must not confirm a group that came into its scope since.
	unconfirmed map[string]time.Time
	scope       *publish.Scope
}

type heartbeater struct {
	b        *Bridge
	sinks    []publish.HeartbeatSink
	interval time.Duration
	last     map[string]time.Time // when each sink's last round began
	claims   map[string]*claim
	mu       sync.Mutex      // guards failing: writeAll writes to the sinks at once
	failing  map[string]bool // the last write to the sink failed (logged once)
	active   bool            // an "active" heartbeat was written since the last "standby"
	// confirmed is the time of the last active heartbeat written (to any
	// sink), carried by every later record.
	confirmed time.Time
	// lastTick is when tick last ran; proofNeeded says that a stall came
	// since (see stalled), and no round is claimed before ZooKeeper has
	// answered once after it.
	lastTick    time.Time
	proofNeeded bool
	// ctx ends with the heartbeater (run's): a wait for the observers
	// ends with it.
	ctx context.Context
	// wide is the scope heartbeats carry for the bridge's, whose watched
	// paths are too many to name (wideScope); nil when they are not.
	wide *publish.Scope
}

// startHeartbeat writes this bridge's first heartbeat (standby) to every
// sink that keeps current values, and confirms them while it is active.
// stop ends that and writes "stopped", unless the bridge was aborted. It
// is called by Run once the sinks are connected.
func (b *Bridge) startHeartbeat() (stop func()) {
	// The first round too waits for a proof: the bridge may have been
	// frozen before the heartbeater first looked, with nothing to tell.
	h := &heartbeater{b: b, interval: b.cfg.Heartbeat, last: map[string]time.Time{},
		claims: map[string]*claim{}, failing: map[string]bool{}, proofNeeded: true}
	if sc := b.scope; sc != nil && len(sc.Watch) > maxScopeWatch {
		// Too long for every heartbeat; made once, as its set hashes
		// every watched path.
		h.wide = wideScope(sc)
	}
	if h.interval <= 0 {
		h.interval = publish.DefaultHeartbeat
	}
	for _, s := range b.cfg.Sinks {
		if hs, ok := s.(publish.HeartbeatSink); ok {
			h.sinks = append(h.sinks, hs)
		}
	}
	if len(h.sinks) == 0 {
		return func() {}
	}
	h.writeAll(publish.BridgeStandby, firstTimeout)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.run(ctx)
	}()
	return func() {
		cancel()
		<-done
		if !b.aborted.Load() {
			h.writeAll(publish.BridgeStopped, lastTimeout)
		}
	}
}

func (h *heartbeater) run(ctx context.Context) {
	h.ctx = ctx
	// Look often, so that a change of role is said at once and a round's
	// claim is written as soon as its sink has caught up.
	t := time.NewTicker(max(min(h.interval/4, 250*time.Millisecond), 5*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if h.b.aborted.Load() {
			return
		}
		h.tick(time.Now())
	}
}

func (h *heartbeater) tick(now time.Time) {
	if h.stalled(now) {
		clear(h.claims)
		h.proofNeeded = true
	}
	role, confirming, unconfirmed := h.b.confirming()
	if role != RoleActive {
		clear(h.claims)
		if h.active {
			h.writeAll(publish.BridgeStandby, h.timeout())
			h.active = false
		}
		return
	}
	if !confirming {
		clear(h.claims) // the values are not confirmed now; readers judge them by the bound
		return
	}
	// The scope of a round claimed below is taken with what it confirms,
	// before ZooKeeper is asked: a path taken in as a group during the
	// proof was not observed as of the round's date.
	scope := h.scope()
	proven := false
	if h.proofNeeded || h.roundDue(now) {
		// A round is dated when ZooKeeper was last asked and answered,
		// never merely now: a client still says connected while its
		// connection carries nothing (a frozen server, a silent
		// partition), and a heartbeat dated by the clock alone confirmed
		// an owner whose node was already gone.
		asked := time.Now()
		// What happened before asking was heard, and what was heard is
		// published: a change made while the bridge was frozen, or its
		// connection silent, is in the backlog the claim below waits for.
		// Unproven, no new round is claimed (readers judge the values
		// by the bound), but the rounds claimed before still are
		// written as their sinks catch up: their proof holds.
		if proven = h.b.zkAnswers(h.timeout()) && h.b.observersCaughtUp(h.ctx, h.timeout()); proven {
			h.proofNeeded, now = false, asked
		}
		// The proof may have taken seconds: a bridge aborted or made
		// standby meanwhile writes no active heartbeat after that, not
		// even for a round claimed before (the next tick says standby).
		if h.b.aborted.Load() || h.b.roleNow() != RoleActive {
			clear(h.claims)
			return
		}
	}
	h.claimAndWrite(now, proven, &claim{at: now, unconfirmed: unconfirmed, scope: scope})
}

// claimAndWrite claims a round (round, its target set per sink) for
// each sink due one, when it was proven, and writes every claimed round
// whose sink has caught up with it.
func (h *heartbeater) claimAndWrite(now time.Time, proven bool, round *claim) {
	// A round's claim: every event published before now is in a sink
	// once the sink has settled what it had settled plus its backlog. The
	// backlog is read before the settled count, so the claim errs late.
	before := h.b.pipe.Stats()
	after := h.b.pipe.Stats()
	for _, s := range h.sinks {
		n := s.Name()
		if proven && h.claims[n] == nil && now.Sub(h.last[n]) >= h.interval {
			h.last[n] = now
			c := *round
			c.target = settled(after.Sinks[n]) + int64(before.Sinks[n].Backlog)
			h.claims[n] = &c
		}
	}
	for _, s := range h.sinks {
		n := s.Name()
		c := h.claims[n]
		if c == nil {
			continue
		}
		st := after.Sinks[n]
		if st.Backlog > 0 && settled(st) < c.target {
			continue // the sink has not caught up with the round yet
		}
		delete(h.claims, n)
		unconfirmed := withRefused(c.unconfirmed, h.b.pipe.Refused(n))
		if len(unconfirmed) > publish.MaxUnconfirmed {
			continue // confirms none: readers judge the values by the bound
		}
		hb := h.record(publish.BridgeActive, c.at)
		hb.Unconfirmed, hb.Scope = unconfirmed, c.scope
		if h.write(s, hb, h.timeout()) {
			h.active = true
			h.confirmed = c.at
		}
	}
}

// withRefused adds to unconfirmed the groups whose latest event the sink
// refused for good (Pipeline.Refused), as of their refused event's time:
// the sink's value of such a group is the one before it, and a heartbeat
// that confirmed it named, fresh, an owner gone since (found by an
// adversarial test: a NATS server refused the next owner's event as too
// large, and who --nats named the owner that had resigned, confirmed).
// Taken when the claim is written, not claimed: the refusal of an event
// published before the round comes once the sink has tried it.
func withRefused(unconfirmed, refused map[string]time.Time) map[string]time.Time {
	if len(refused) == 0 {
		return unconfirmed
	}
	out := make(map[string]time.Time, len(unconfirmed)+len(refused))
	maps.Copy(out, unconfirmed)
	for g, t := range refused {
		if since, ok := out[g]; !ok || t.Before(since) {
			out[g] = t
		}
	}
	return out
}

// roundDue reports whether a sink's next round may begin at now.
func (h *heartbeater) roundDue(now time.Time) bool {
	for _, s := range h.sinks {
		if n := s.Name(); h.claims[n] == nil && now.Sub(h.last[n]) >= h.interval {
			return true
		}
	}
	return false
}

// stalled reports whether the heartbeater did not run for an interval or
// more before now: the process was frozen (SIGSTOP, a paused VM) or
// starved. Its ZooKeeper client may then still say connected while what
// ZooKeeper sent meanwhile, or that the connection is gone, is not heard
// yet: a round claimed now would confirm values as of a time the bridge
// did not observe.
func (h *heartbeater) stalled(now time.Time) bool {
	last := h.lastTick
	h.lastTick = now
	return !last.IsZero() && now.Sub(last) >= h.interval
}

// zkAnswers makes one round trip to ZooKeeper on the bridge's session,
// within d. ZooKeeper sends a client every watch event before the answer
// to a later request, so once it answers, what happened before the
// request was sent has been heard. The round trip is a sync: a read is
// answered by the member from its own state, and a follower cut off from
// the rest of the ensemble answered one from a state as old as the cut,
// so that active heartbeats confirmed an owner whose node was gone from
// the ensemble for 1.8 s (found by an adversarial test); a follower
// answers a sync only once it has applied what the leader had when the
// sync reached it.
func (b *Bridge) zkAnswers(d time.Duration) bool {
	st, s := b.sessionState()
	if s == nil || st != elect.StateConnected {
		return false
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Conn().Sync("/")
		done <- err
	}()
	select {
	case err := <-done:
		return err == nil
	case <-time.After(d):
		return false
	}
}

// observersCaughtUp waits, within d (or until ctx ends), until the
// discoverers have listed what their watches told of (awaitListings), and
// the observers have published what the session heard so far
// (groupSet.settle): heard is not yet seen, and a watch event waiting for
// its group's read, or for its root's listing, is a change no claim
// covers.
func (b *Bridge) observersCaughtUp(ctx context.Context, d time.Duration) bool {
	b.mu.Lock()
	settle := b.settle
	b.mu.Unlock()
	if settle == nil {
		return true // nothing observed yet
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	// The discoverers first: a child one has yet to list is a group
	// the observers have not been given.
	return b.awaitListings(ctx) && settle(ctx)
}

// settled counts what a sink has done with the events given to it. Not
// the events dropped when the bridge stopped publishing (Dropped): a round
// claimed before the drop must not be met by it, and the claims of a
// bridge that stopped publishing are cleared anyway.
func settled(st publish.SinkStats) int64 { return st.Delivered + st.Collapsed + st.Rejected }

// confirming reports the bridge's role and whether it may confirm its
// values now: active and publishing (not holding), its session connected,
// every discover root looked at (listed, or found missing), the groups
// the stores name an owner of below none of them taken in (adoptReported:
// a heartbeat before confirmed those gone owners), and every group past
// its snapshot, save those it cannot read, returned as
// unconfirmed (each with the time since which it has not read it: zero
// for a group not read since the bridge started), at most
// publish.MaxUnconfirmed of them.
func (b *Bridge) confirming() (role Role, ok bool, unconfirmed map[string]time.Time) {
	st, _ := b.sessionState()
	b.pubMu.Lock()
	publishing := b.publishing
	b.pubMu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.role != RoleActive || !publishing || st != elect.StateConnected || len(b.unlisted) > 0 || b.adopting {
		return b.role, false, nil
	}
	for g, gs := range b.groups {
		switch {
		case gs == GroupLive:
			continue
		case gs == GroupPending && b.readErrs[g] == "":
			return b.role, false, nil // about to be read
		case len(unconfirmed) == publish.MaxUnconfirmed:
			return b.role, false, nil
		case unconfirmed == nil:
			unconfirmed = map[string]time.Time{}
		}
		unconfirmed[g] = b.unknownSince[g]
	}
	return b.role, true, unconfirmed
}

// writeAll writes a heartbeat of state, dated now, to every sink at once,
// each within d.
func (h *heartbeater) writeAll(state publish.BridgeState, d time.Duration) {
	hb := h.record(state, time.Now())
	var wg sync.WaitGroup
	for _, s := range h.sinks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.write(s, hb, d)
		}()
	}
	wg.Wait()
}

func (h *heartbeater) timeout() time.Duration {
	return min(heartbeatTimeout, max(h.interval, time.Second))
}

func (h *heartbeater) record(state publish.BridgeState, at time.Time) publish.Heartbeat {
	confirmed := h.confirmed
	if state == publish.BridgeActive {
		confirmed = at
	}
	return publish.Heartbeat{Source: h.b.cfg.Source, State: state, Time: at, Interval: h.interval, HA: h.b.cfg.haPath(), Confirmed: confirmed,
		Scope: h.scope()}
}

// scope is the scope a heartbeat written now confirms: the configured
// one less the paths found not to be groups (see Bridge.scopeNow).
func (h *heartbeater) scope() *publish.Scope {
	sc := h.b.scope
	if h.wide != nil {
		sc = h.wide
	}
	return h.b.scopeNow(sc)
}

// write writes one heartbeat, logging the first failure in a row and the
// recovery.
func (h *heartbeater) write(s publish.HeartbeatSink, hb publish.Heartbeat, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	n := s.Name()
	err := s.WriteHeartbeat(ctx, hb)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		if !h.failing[n] {
			h.b.log.Warn("cannot write the heartbeat: readers will call this bridge's values stale", "sink", n, "state", hb.State, "err", err)
		}
		h.failing[n] = true
		return false
	}
	if h.failing[n] {
		h.b.log.Info("heartbeat written again", "sink", n, "state", hb.State)
	}
	h.failing[n] = false
	h.b.log.Debug("heartbeat", "sink", n, "state", hb.State, "time", hb.Time)
	return true
}
