package publish

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// lane is one sink's backlog: a FIFO of events in Publish order (so every
// group's events stay in order), the batch being written, and the sink's
// metrics. Publish appends; the sink's single worker takes from the front.
type lane struct {
	sink     Sink
	name     string
	lossless bool
	bound    int

	mu         sync.Mutex
	q          []Event // pending, not yet handed to the worker
	inflight   int     // events of the batch the worker is writing
	collapseAt int     // collapse when len(q) reaches this (>= bound)
	wake       chan struct{}

	// private: only this process writes the sink (Private); epoch counts
	// the drops of its backlog (Pause), so that a batch taken before one
	// is dropped too. Both guarded by mu.
	private bool
	epoch   uint64
	batch   []Event // the batch in flight, for the groups dropBacklog names
	// gapNext: groups whose next event queued here carries Gap
	// (Pipeline.MarkGap). Guarded by mu.
	gapNext map[string]bool
	// refused: groups whose latest event here the sink refused for good,
	// each with that event's time (every change before it is stored, the
	// refused one is not). Guarded by mu.
	refused map[string]time.Time
	// refusedOwner: the refused groups among them whose refused events
	// include an owner event, which only a stored owner event makes up
	// for (restatesOwner). Guarded by mu.
	refusedOwner map[string]bool
	// refusedReady: the term of a refused leader.ready among them, which
	// an owner event of that term other than a ready does not make up
	// for (the owners bucket keeps a tenure's value, not ready). Guarded
	// by mu.
	refusedReady map[string]int64

	busy     atomic.Bool // the worker has not returned
	c        laneCounters
	byType   map[Type]prometheus.Counter
	latency  prometheus.Observer
	backlogG prometheus.Gauge
	collapsC prometheus.Counter
	errorsC  prometheus.Counter
	rejectC  prometheus.Counter
	dropC    prometheus.Counter
}

func newLane(s Sink, lossless bool, bound int, m *metrics) *lane {
	name := s.Name()
	pv, _ := s.(Private)
	l := &lane{
		sink: s, name: name, lossless: lossless, bound: bound, collapseAt: bound,
		private:  pv != nil && pv.Private(),
		wake:     make(chan struct{}, 1),
		byType:   make(map[Type]prometheus.Counter, len(Types)),
		latency:  m.latency.WithLabelValues(name),
		backlogG: m.backlog.WithLabelValues(name),
		collapsC: m.collapsed.WithLabelValues(name),
		errorsC:  m.errors.WithLabelValues(name),
		rejectC:  m.rejected.WithLabelValues(name),
		dropC:    m.dropped.WithLabelValues(name),
	}
	for _, t := range Types {
		l.byType[t] = m.events.WithLabelValues(string(t), name)
	}
	l.backlogG.Set(0)
	return l
}

// enqueue appends events, collapsing the backlog when it reaches its bound.
// It never blocks beyond the lane's lock.
func (l *lane) enqueue(events []Event) {
	l.mu.Lock()
	from := len(l.q)
	l.q = append(l.q, events...)
	for i := from; len(l.gapNext) > 0 && i < len(l.q); i++ {
		if g := l.q[i].Group; l.gapNext[g] {
			l.q[i].Gap = true // the lane's own copy
			delete(l.gapNext, g)
		}
	}
	if !l.lossless && len(l.q) >= l.collapseAt {
		var dropped int
		l.q, dropped = collapse(l.q)
		if dropped > 0 {
			l.c.collapsed.Add(int64(dropped))
			l.collapsC.Add(float64(dropped))
		}
		// When every pending event is still needed (more live groups than
		// the bound), wait for the backlog to double before trying again,
		// so collapsing stays amortised O(1) per event.
		l.collapseAt = max(l.bound, 2*len(l.q))
	}
	l.backlogG.Set(float64(len(l.q) + l.inflight))
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// take moves up to n events from the front of the backlog to the in-flight
// batch, and says which epoch of the backlog they are of. It returns nil
// when nothing is pending.
func (l *lane) take(n int) ([]Event, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.q) == 0 {
		return nil, l.epoch
	}
	n = min(n, len(l.q))
	batch := make([]Event, n)
	copy(batch, l.q)
	// Clear the taken slots so they pin nothing; append reallocates (and
	// drops the consumed head) once the capacity behind q runs out.
	clear(l.q[:n])
	l.q = l.q[n:]
	if len(l.q) == 0 {
		l.q = nil
	}
	l.inflight, l.batch = n, batch
	if l.collapseAt > l.bound && len(l.q) < l.bound {
		l.collapseAt = l.bound
	}
	return batch, l.epoch
}

// dropBacklog drops every event pending, and the batch in flight once its
// worker looks (stale), and returns their groups. A Private sink's lane
// drops nothing.
func (l *lane) dropBacklog() (dropped int, groups []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.private {
		return 0, nil
	}
	l.epoch++
	for _, e := range l.batch[len(l.batch)-l.inflight:] { // what is left of it in flight
		groups = append(groups, e.Group)
	}
	for i := range l.q {
		groups = append(groups, l.q[i].Group)
	}
	dropped = len(l.q)
	l.c.dropped.Add(int64(dropped))
	l.dropC.Add(float64(dropped))
	l.q = nil
	l.collapseAt = l.bound
	l.backlogG.Set(float64(l.inflight))
	return dropped, groups
}

// stale reports whether a batch of epoch was dropped (dropBacklog).
func (l *lane) stale(epoch uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epoch != epoch
}

// abandon records that the in-flight batch was dropped (dropBacklog).
func (l *lane) abandon(batch []Event) {
	l.c.dropped.Add(int64(len(batch)))
	l.dropC.Add(float64(len(batch)))
	l.mu.Lock()
	l.inflight, l.batch = 0, nil
	l.backlogG.Set(float64(len(l.q)))
	l.mu.Unlock()
}

// ack records that the in-flight batch was stored.
func (l *lane) ack(batch []Event, clk Clock) { l.settle(batch, 0, clk) }

// reject records that the sink refused e for good: it leaves the in-flight
// batch, which keeps left events, rest. Until the sink stores a later
// event of e's group, the value it keeps of the group (an owners bucket's,
// an owners topic's) is the one before e: the group is refused (Refused)
// and its next event here carries Gap, so that neither a heartbeat nor a
// history passes the missing change over. It reports whether the group was
// not refused already.
func (l *lane) reject(e Event, err error, left int, rest []Event) (first bool) {
	msg := fmt.Sprintf("event %s (%s %s) refused for good, dropped from this sink: %v", e.ID, e.Type, e.Group, err)
	l.c.lastErr.Store(&msg)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.refused[e.Group]; !ok {
		if l.refused == nil {
			l.refused = map[string]time.Time{}
		}
		l.refused[e.Group], first = e.Time, true
	}
	// Counted settled only once in refused: a heartbeat whose round the
	// refusal completes asks Refused next, and must find the group.
	l.c.rejected.Add(1)
	l.rejectC.Inc()
	l.inflight = left
	l.backlogG.Set(float64(len(l.q) + l.inflight))
	if e.Type.Gains() || e.Type.Loses() || e.Type == LeaderReady {
		if l.refusedOwner == nil {
			l.refusedOwner = map[string]bool{}
		}
		l.refusedOwner[e.Group] = true
	}
	if e.Type == LeaderReady {
		if l.refusedReady == nil {
			l.refusedReady = map[string]int64{}
		}
		l.refusedReady[e.Group] = e.Term
	}
	for _, q := range [][]Event{rest, l.q} {
		for i := range q {
			if q[i].Group == e.Group {
				q[i].Gap = true
				return first
			}
		}
	}
	if l.gapNext == nil {
		l.gapNext = map[string]bool{}
	}
	l.gapNext[e.Group] = true
	return first
}

// settle records that stored, the front of the in-flight batch, was
// stored; left events of the batch remain in flight.
func (l *lane) settle(batch []Event, left int, clk Clock) {
	now := clk.Now()
	for i := range batch {
		l.byType[batch[i].Type].Inc()
		if !batch[i].Time.IsZero() {
			l.latency.Observe(now.Sub(batch[i].Time).Seconds())
		}
	}
	l.c.delivered.Add(int64(len(batch)))
	l.mu.Lock()
	for i := 0; i < len(batch) && len(l.refused) > 0; i++ {
		// A group's stored event after a refused one brings the sink's
		// value of the group up to date, unless an owner event was
		// refused: the owners bucket and topic take owner events only, and
		// a candidate event stored after it left the owner gone since
		// confirmed. (No look at all while nothing is refused: every
		// delivery settles here.)
		if g := batch[i].Group; !l.refusedOwner[g] || restatesOwner(batch[i], l.refusedReady[g]) {
			delete(l.refused, g)
			delete(l.refusedOwner, g)
			delete(l.refusedReady, g)
		}
	}
	l.inflight = left
	if left == 0 {
		l.batch = nil // pins nothing once stored
	}
	l.backlogG.Set(float64(len(l.q) + l.inflight))
	l.mu.Unlock()
}

// restatesOwner reports whether e, stored, gives a sink's owner value of
// its group whole: a new owner, its ready, or no owner. A loss naming a
// successor writes nothing there (the successor's event does), nor does a
// candidate event. After a refused leader.ready of readyTerm (0: none), a
// gain of that term (a snapshot re-stating the owner without its ready)
// leaves the value not ready, so it does not either.
func restatesOwner(e Event, readyTerm int64) bool {
	switch {
	case e.Type.Gains():
		return e.Owner != nil && (readyTerm == 0 || e.Term != readyTerm)
	case e.Type == LeaderReady:
		return e.Owner != nil
	case e.Type.Loses():
		return e.Owner == nil
	}
	return false
}

// refusedGroups is a copy of refused.
func (l *lane) refusedGroups() map[string]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.refused) == 0 {
		return nil
	}
	return maps.Clone(l.refused)
}

// size is the number of events not yet acknowledged.
func (l *lane) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.q) + l.inflight
}

func (l *lane) failed(err error) {
	l.c.errors.Add(1)
	l.errorsC.Inc()
	l.c.connected.Store(false)
	msg := err.Error()
	l.c.lastErr.Store(&msg)
}

// markGap has the next event of group queued here carry Gap.
func (l *lane) markGap(group string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gapNext == nil {
		l.gapNext = map[string]bool{}
	}
	l.gapNext[group] = true
}
