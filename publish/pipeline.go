package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkherald/herald/elect"
)

// stopGrace is how long Close waits, after its context ended and the
// workers were told to stop, for them to return. A variable for tests.
var stopGrace = 2 * time.Second

// Pipeline fans events out to sinks: one backlog and one worker per sink,
// so a slow or dead sink never holds up the caller or another sink.
type Pipeline struct {
	cfg   config
	lanes []*lane
	m     *metrics

	published atomic.Int64
	gaps      atomic.Int64
	// writing counts the sinks' Write calls under way (see AwaitWrites).
	writing atomic.Int64

	// cur is every group's state as published (current.go), for a sink
	// that lost its store of current state (StateKeeper); nil when no
	// sink keeps such a store, so that nothing is held. curMu also
	// makes folding and queueing one step, so that every lane gets the
	// events in the order they were folded.
	curMu    sync.Mutex
	cur      current
	observed atomic.Pointer[func(group string) bool]
	// paused (Pause) holds back restatements, and owed names the lanes
	// owed one on Resume; both guarded by curMu.
	paused bool
	owed   []*lane

	mu     sync.RWMutex // guards closed against concurrent enqueues
	closed bool

	startOnce sync.Once
	running   atomic.Bool
	wg        sync.WaitGroup
	draining  chan struct{} // closed by Close: workers exit once empty
	drainOnce sync.Once
	hardCtx   context.Context // cancelled to abandon writes
	hardStop  context.CancelFunc
	done      chan struct{} // closed when Close has finished
	closeOnce sync.Once
	closeErr  error
}

// New builds a pipeline over sinks, which must have distinct, non-empty
// names. The pipeline owns the sinks: it connects them and Close closes
// them. Call Run to start delivering, and Close to finish.
func New(sinks []Sink, opts ...Option) (*Pipeline, error) {
	cfg := defaults()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if len(sinks) == 0 {
		return nil, fmt.Errorf("%w: no sinks: give New at least one Sink", ErrBadOption)
	}
	names := map[string]bool{}
	for i, s := range sinks {
		if s == nil {
			return nil, fmt.Errorf("%w: sink %d is nil", ErrBadOption, i)
		}
		n := s.Name()
		if n == "" || names[n] {
			return nil, fmt.Errorf("%w: sink %d has empty or duplicate name %q: names label metrics and must be unique", ErrBadOption, i, n)
		}
		names[n] = true
	}
	for n := range cfg.lossless {
		if !names[n] {
			return nil, fmt.Errorf("%w: Lossless(%q) names no sink given to New", ErrBadOption, n)
		}
	}
	reg := cfg.reg
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	p := &Pipeline{cfg: cfg, m: m, draining: make(chan struct{}), done: make(chan struct{})}
	p.hardCtx, p.hardStop = context.WithCancel(context.Background())
	for _, s := range sinks {
		p.lanes = append(p.lanes, newLane(s, cfg.lossless[s.Name()], cfg.backlog, m))
		if _, ok := s.(StateKeeper); ok && p.cur == nil {
			p.cur = current{} // held only for a sink that may need it restated
		}
	}
	m.health.lanes = p.lanes
	return p, nil
}

// Publish validates events and queues them for every sink, in the order
// given. It never waits for a sink. Either every event is queued or, when
// one is invalid, none is and the error names it. After Close it returns
// ErrClosed.
func (p *Pipeline) Publish(ctx context.Context, events ...Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	gaps := 0
	for i := range events {
		if err := events[i].Validate(); err != nil {
			return fmt.Errorf("event %d of %d: %w", i+1, len(events), err)
		}
		if events[i].Gap {
			gaps++
		}
	}
	if len(events) == 0 {
		return nil
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ErrClosed
	}
	p.curMu.Lock()
	for i := range events {
		if p.cur != nil {
			p.cur.apply(events[i])
		}
	}
	for _, l := range p.lanes {
		l.enqueue(events)
	}
	p.curMu.Unlock()
	p.published.Add(int64(len(events)))
	if gaps > 0 {
		p.gaps.Add(int64(gaps))
		p.m.gaps.Add(float64(gaps))
	}
	return nil
}

// Observed says which groups are observed now: when a sink lost its store
// of current state (StateKeeper), only their state is written to it again,
// and the pipeline forgets the others (groups no longer observed). Without
// it every group ever published is. fn is called without the pipeline's
// locks held, from a sink's worker; it must not wait for the pipeline.
// It may be called at any time; the last fn given is used.
func (p *Pipeline) Observed(fn func(group string) bool) {
	if fn == nil {
		p.observed.Store(nil)
		return
	}
	p.observed.Store(&fn)
}

// Forget drops what the pipeline holds of group's current state (see
// Observed): the caller stopped observing it. A bridge whose groups come
// and go (a lock per job below a discover root) would otherwise hold every
// group it ever published until a sink lost its store.
func (p *Pipeline) Forget(group string) {
	p.curMu.Lock()
	delete(p.cur, group)
	p.curMu.Unlock()
}

// MarkGap has the next event of group queued for each sink that which
// picks (by its name, and whether it is Private) carry Gap, whatever the
// event says: those sinks missed some of the group's changes that the
// others hold. A bridge taking over marks this way its own audit log,
// which never got the changes its predecessor stored in the shared sinks
// (Bridge's startPublishing). It is not counted in Stats.Gaps, which
// counts what the observer could not prove.
func (p *Pipeline) MarkGap(group string, which func(sink string, private bool) bool) {
	for _, l := range p.lanes {
		if which(l.name, l.private) {
			l.markGap(group)
		}
	}
}

// Refused returns, for the sink named sink, the groups whose latest event
// it refused for good (RejectedError), each with that event's time: the
// value the sink keeps of such a group is older than the group's state
// from then on, until the sink stores a later event of it (after a
// refused owner event, a later owner event). A heartbeat must not confirm
// it meanwhile.
func (p *Pipeline) Refused(sink string) map[string]time.Time {
	for _, l := range p.lanes {
		if l.name == sink {
			return l.refusedGroups()
		}
	}
	return nil
}

// Pause tells the pipeline that its caller stops publishing for a while:
// an HA bridge standing by, which must write nothing. Every sink but a
// Private one drops what it had still to write, the batch it was writing
// included (a write already sent may still land): the active bridge
// publishes those changes, and an older one landing after what it wrote
// would undo it (the owners topic's last record names the owner). Pause
// returns the groups of the dropped events. The pipeline keeps every
// group's state as published, and the caller publishes, before Resume,
// what happened meanwhile, so that on Resume it knows every group again,
// those that did not change included. While paused, a sink that lost its
// store of current state is not told it (the active bridge tells it the
// truth); it is told on Resume, the events published before Resume
// folded in.
func (p *Pipeline) Pause() (droppedGroups []string) {
	p.curMu.Lock()
	p.paused = true
	p.curMu.Unlock()
	seen := map[string]bool{}
	for _, l := range p.lanes {
		n, groups := l.dropBacklog()
		for _, g := range groups {
			if !seen[g] {
				seen[g] = true
				droppedGroups = append(droppedGroups, g)
			}
		}
		if n > 0 && p.cfg.log != nil {
			p.cfg.log.Info("stopped publishing: dropped what the sink had still to write; the active bridge publishes it", "sink", l.name, "events", n)
		}
	}
	return droppedGroups
}

// Resume ends Pause, and restates the groups to every sink found to have
// lost its store meanwhile.
func (p *Pipeline) Resume() {
	p.curMu.Lock()
	owed := p.owed
	p.paused, p.owed = false, nil
	p.curMu.Unlock()
	for _, l := range owed {
		p.restate(l)
	}
}

// restate queues, for the sink of l alone, the current state of every
// group published (and still observed, see Observed) as snapshot events
// without the gap flag: the sink lost its store of current state. They go
// behind everything the sink has pending, and before anything published
// later, so a group's events stay in order.
func (p *Pipeline) restate(l *lane) {
	p.curMu.Lock()
	if p.paused {
		if !slices.Contains(p.owed, l) {
			p.owed = append(p.owed, l)
		}
		p.curMu.Unlock()
		return
	}
	groups := make([]string, 0, len(p.cur))
	for g := range p.cur {
		groups = append(groups, g)
	}
	p.curMu.Unlock()
	var gone []string
	if fn := p.observed.Load(); fn != nil {
		kept := groups[:0]
		for _, g := range groups {
			if (*fn)(g) {
				kept = append(kept, g)
			} else {
				gone = append(gone, g)
			}
		}
		groups = kept
	}
	slices.Sort(groups)
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return
	}
	p.curMu.Lock()
	for _, g := range gone {
		delete(p.cur, g)
	}
	now := p.cfg.clock.Now()
	var events []Event
	for _, g := range groups {
		if st := p.cur[g]; st != nil {
			events = append(events, st.snapshot(g, now)...)
		}
	}
	if len(events) > 0 {
		l.enqueue(events)
	}
	p.curMu.Unlock()
	if p.cfg.log != nil {
		p.cfg.log.Warn("sink lost its store of current state (deleted while herald ran) and made it again; writing every group's current state to it again",
			"sink", l.name, "groups", len(groups), "events", len(events))
	}
}

// Consume translates every change from changes (see Translate) and
// publishes the events, stamped with the WithSource name and the clock's
// time. It returns nil when changes is closed, ctx's error when ctx ends,
// or Publish's error.
func (p *Pipeline) Consume(ctx context.Context, changes <-chan elect.Change) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case c, ok := <-changes:
			if !ok {
				return nil
			}
			if err := p.Publish(ctx, Translate(c, p.cfg.source, p.cfg.clock.Now())...); err != nil {
				return fmt.Errorf("publish: change %s of %s: %w", c.Kind, c.Group, err)
			}
		}
	}
}

func (p *Pipeline) start() {
	p.startOnce.Do(func() {
		for _, l := range p.lanes {
			p.wg.Add(1)
			go p.work(l)
		}
	})
}

// Run delivers events until ctx ends or Close finishes. When ctx ends first
// the pipeline stops at once, without draining, and refuses new events;
// for a graceful stop call Close (with its own deadline) before cancelling
// Run's context. Call Close in every case: it closes the sinks and reports
// what was left.
func (p *Pipeline) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	p.start()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		p.refuse()
		p.hardStop()
		return ctx.Err()
	}
}

func (p *Pipeline) refuse() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}

// Close stops accepting events, lets every sink drain its backlog until ctx
// ends, then stops the workers and closes the sinks. It returns nil when
// everything published was acknowledged, else an *UndeliveredError (wrapping
// ErrUndelivered) saying how many events each sink missed; errors from
// Sink.Close are joined to it. Close may be called more than once; later
// calls return the first result.
func (p *Pipeline) Close(ctx context.Context) error {
	p.closeOnce.Do(func() { p.closeErr = p.close(ctx) })
	return p.closeErr
}

func (p *Pipeline) close(ctx context.Context) error {
	p.refuse()
	p.start() // so a pipeline never Run still drains
	p.drainOnce.Do(func() { close(p.draining) })
	stopped := make(chan struct{})
	go func() { p.wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		p.hardStop()
		select {
		case <-stopped:
		case <-time.After(stopGrace):
		}
	}
	p.hardStop()
	var ue UndeliveredError
	for _, l := range p.lanes {
		if n := l.size(); n > 0 {
			if ue.Left == nil {
				ue.Left = map[string]int{}
			}
			ue.Left[l.name] = n
		}
	}
	select {
	case <-stopped:
	default:
		for _, l := range p.lanes {
			if l.busy.Load() {
				ue.Stuck = append(ue.Stuck, l.name)
			}
		}
	}
	var errs []error
	if ue.Left != nil || ue.Stuck != nil {
		errs = append(errs, &ue)
	}
	for _, l := range p.lanes {
		if err := l.sink.Close(); err != nil {
			errs = append(errs, fmt.Errorf("publish: close sink %s: %w", l.name, err))
		}
	}
	close(p.done)
	return errors.Join(errs...)
}
