package elect

import (
	"sync"
	"time"
)

// A process that does not run for a while (SIGSTOP, a paused VM, a machine
// starved of CPU) reads the watch events that came meanwhile only when it
// runs again, and would date the changes they tell of then: a release seen
// seconds late looks like a tenure seconds longer. The stall watch notices
// such stretches — a ticker whose ticks come much further apart than they
// should — so that an observer can say when a change it reports may have
// happened earlier than it saw it (Change.NotBefore).
const (
	stallTick  = 100 * time.Millisecond
	stallLimit = time.Second // a tick this late is a stall, not scheduling noise
	stallsKept = 16
)

type stallWatch struct {
	mu    sync.Mutex
	users int           // the observers that want it
	stop  chan struct{} // ends the ticker once nobody does
	// ends are when the latest stalls ended (time.Now, so with the
	// monotonic reading), oldest first; last is the last tick.
	ends []time.Time
	last time.Time
}

// stalls is the process's stall watch: a stall stops every goroutine.
var stalls stallWatch

// acquire starts watching, unless it runs already for another user.
func (w *stallWatch) acquire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.users++
	if w.users == 1 {
		w.stop, w.last, w.ends = make(chan struct{}), time.Now(), nil
		go w.run(w.stop)
	}
}

// release stops watching once its last user is done.
func (w *stallWatch) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.users--
	if w.users == 0 {
		close(w.stop)
	}
}

func (w *stallWatch) run(stop <-chan struct{}) {
	t := time.NewTicker(stallTick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := time.Now()
		w.mu.Lock()
		if now.Sub(w.last) > stallLimit {
			if len(w.ends) == stallsKept {
				w.ends = append(w.ends[:0], w.ends[1:]...)
			}
			w.ends = append(w.ends, now)
		}
		w.last = now
		w.mu.Unlock()
	}
}

// since reports whether the process stalled at some moment after t: a
// stall that ended after t, or one the ticker has not caught up with yet
// (its last tick is more than stallLimit old: the process has just run
// again, and this goroutine before the ticker's).
func (w *stallWatch) since(t time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.users > 0 && time.Since(w.last) > stallLimit {
		return true
	}
	return len(w.ends) > 0 && w.ends[len(w.ends)-1].After(t)
}

// Stalled reports whether this process stalled (did not run for over a
// second: SIGSTOP, a paused VM, starved of CPU) at some moment after t, as
// far as the stall watch of a running observer (Observe, ObserveSingle,
// ObserveMany) saw it; false while none runs. What the process knew
// before such a stall may be out of date until it has read what came
// meanwhile.
func Stalled(after time.Time) bool { return stalls.since(after) }
