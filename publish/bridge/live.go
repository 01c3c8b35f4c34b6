package bridge

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkherald/herald/publish"
)

// live is what the live page follows: which groups changed (a numbered
// log the page's event streams read from), and the events published
// lately, for the groups' recent timelines. Both are bounded, however many
// groups the bridge observes.
type live struct {
	// boot tells this process's numbers from another's: a page that
	// followed a bridge before it restarted holds a number of the old
	// log, which the new one may well have reached with other changes.
	boot string
	mu   sync.Mutex
	seq  uint64   // number of the last change
	log  []string // the groups of changes seq-len(log)+1 .. seq, oldest first
	wake chan struct{}
	// recent holds the last events, oldest first, from head.
	recent []publish.Event
	head   int
}

const (
	liveLogSize    = 8192
	liveRecentSize = 20000
)

func newLive() *live {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return &live{boot: hex.EncodeToString(b[:]), wake: make(chan struct{})}
}

// cursor is where a reader of the log stands: this process's boot and a
// change's number, as the page and the stream's event ids carry it.
func (l *live) cursor(seq uint64) string { return l.boot + "." + strconv.FormatUint(seq, 10) }

// parseCursor reads a cursor. ok is false when it is not one of this
// process's: another process's (the bridge restarted) or malformed; the
// reader must then read everything again.
func (l *live) parseCursor(c string) (seq uint64, ok bool) {
	boot, n, found := strings.Cut(c, ".")
	if !found || boot != l.boot {
		return 0, false
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	return seq, err == nil
}

// changed notes that group's row may read otherwise now ("" for every
// group: a reload).
func (l *live) changed(group string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	if len(l.log) == liveLogSize {
		copy(l.log, l.log[liveLogSize/2:])
		l.log = l.log[:liveLogSize/2]
	}
	l.log = append(l.log, group)
	close(l.wake)
	l.wake = make(chan struct{})
}

// since returns the groups changed after seq (each once), the number to
// ask from next, and whether the reader fell so far behind (or a reload
// was asked for) that it should read everything again.
func (l *live) since(seq uint64) (groups []string, next uint64, reload bool, wake <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := l.seq - uint64(len(l.log)) + 1
	if seq+1 < first || seq > l.seq {
		// Fallen behind the log, or a number from before a restart.
		return nil, l.seq, true, l.wake
	}
	seen := map[string]bool{}
	for _, g := range l.log[seq+1-first:] {
		if g == "" {
			return nil, l.seq, true, l.wake
		}
		if !seen[g] {
			seen[g] = true
			groups = append(groups, g)
		}
	}
	return groups, l.seq, false, l.wake
}

// record keeps events for the recent timelines: the changes, not the
// snapshots re-stating an owner (the timeline takes the current owner's
// first sight from the group's row), unless one says an owner may be
// missing. A start or reconnect over 100,000 groups so costs the window
// nothing.
func (l *live) record(events []publish.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range events {
		if e.Snapshot && !e.Gap {
			continue
		}
		if len(l.recent) < liveRecentSize {
			l.recent = append(l.recent, e)
			continue
		}
		l.recent[l.head] = e
		l.head = (l.head + 1) % liveRecentSize
	}
}

// eventsOf returns the recent events of the groups match accepts, oldest
// first.
func (l *live) eventsOf(match func(group string) bool) []publish.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []publish.Event
	for i := range l.recent {
		e := l.recent[(l.head+i)%len(l.recent)]
		if match(e.Group) {
			out = append(out, e)
		}
	}
	return out
}

// current is the log's last number.
func (l *live) current() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// row is what the live page shows of one group.
type row struct {
	Group     string        `json:"group"`
	Recipe    string        `json:"recipe"`
	Owner     string        `json:"owner"`
	Node      string        `json:"node"`
	Term      int64         `json:"term,omitempty"`
	Since     time.Time     `json:"since"`
	SinceSeen bool          `json:"since_seen"`
	State     string        `json:"state"`
	Why       string        `json:"why,omitempty"`
	Ownerless time.Duration `json:"ownerless"`
	// OwnerlessSeen: the stretch without an owner began when the bridge
	// saw it; else Ownerless is a lower bound (a snapshot, a loss seen late).
	OwnerlessSeen bool `json:"ownerless_seen"`
	Changes       int  `json:"changes_last_hour"`
	Gone          bool `json:"gone,omitempty"`
}
