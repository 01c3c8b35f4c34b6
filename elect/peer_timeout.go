package elect

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// A runner's bound (how long after its node went without a release its
// work may still run, see Handle.PredecessorLowestSince) grows with its
// own session timeout: the client gives a silent connection up after a
// share of it, and a frozen runner's watchdog waits a share of it. A
// waiter given a shorter timeout than the owner before it would wait too
// little. So each session node carries its session's timeout (timeout_ms,
// in sessionNodeContent and in every note written over it), and a waiter
// under ProveSessionEnd reads the session nodes of the herald nodes below
// its own, once per session: LongestTimeoutSeen is the longest of them
// and its own, the timeout a runner's bound is taken from.

// sessionNodeContent is what our session node holds when it is made,
// before any note: the herald mark, our session's timeout and whether its
// participants wait for their predecessor's stop (WaitsForPredecessor,
// which a deposed runner reads of the group's other herald nodes). Its data
// also says that its session notes every deletion of its own nodes that
// it records nowhere else. An observer tells that from the stat alone
// (DataLength), with no permission: a session node without data is an
// older herald's, which noted nothing, so that a node of its session gone
// without a record may be its own deletion, not someone else's.
func sessionNodeContent(timeout time.Duration, waits bool) []byte {
	b, _ := json.Marshal(sessionNote{Herald: 1, TimeoutMS: timeout.Milliseconds(), Waits: waits})
	return b
}

// timeoutIn reads the session timeout a session node's data carries (0
// when it carries none: an older herald's, or not herald's at all). One
// no session can have (ZooKeeper carries it in 32 bits of milliseconds)
// was written by hand and tells none: taken, a runner's bound computed
// from it overflowed, and with 6e12 ms its wait came out negative.
func timeoutIn(b []byte) time.Duration {
	var n sessionNote
	if len(b) == 0 || json.Unmarshal(b, &n) != nil || n.Herald == 0 || n.TimeoutMS <= 0 || n.TimeoutMS > math.MaxInt32 {
		return 0
	}
	return time.Duration(n.TimeoutMS) * time.Millisecond
}

// LongestTimeoutSeen is the longest of this session's timeout and those
// of the herald sessions whose session nodes it has read: under
// ProveSessionEnd, a waiter reads those of the herald nodes below its own
// in each listing (each session once), and PredecessorReleased, finding
// no release that vouches for the owners before, those of every live
// session node kept where ours is (see learnLiveTimeouts). `herald run`
// and `herald lock`
// take the bound they wait for an owner that cannot hear from it, so that
// a copy given a shorter --session-timeout than the owner before it waits
// as long as that owner may take to stop. It only grows: a long timeout
// seen once is kept for the session's life.
func (s *Session) LongestTimeoutSeen() time.Duration {
	if d := time.Duration(s.longestSeen.Load()); d > s.timeout {
		return d
	}
	return s.timeout
}

// noteTimeout records the session timeout a session node at p showed (0:
// none, or the node was not there; the node is not read again).
func (s *Session) noteTimeout(p string, d time.Duration) {
	s.timeoutsRead.Store(p, d)
	for {
		cur := s.longestSeen.Load()
		if int64(d) <= cur || s.longestSeen.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// learnTimeouts reads, in one round trip, the session nodes of the herald
// nodes in lower that this session has not read yet, and notes the
// timeouts they carry. A failed read is left for the next listing.
func (w *waiter) learnTimeouts(ctx context.Context, lower []entry) {
	if !w.q.o.sessionProof {
		return
	}
	var paths []string
	for _, e := range lower {
		p := w.q.sessionNodeOf(e.name)
		if _, read := w.q.s.timeoutsRead.Load(p); p == "" || read {
			continue
		}
		paths = append(paths, p)
	}
	if len(paths) == 0 {
		return
	}
	w.q.s.readTimeouts(ctx, paths)
}

// readTimeouts reads the session nodes at paths, a few at a time, and
// notes the timeouts they carry (0 for one gone or not ours to read). A
// failed read is left for a later look; it reports whether every read was
// answered.
func (s *Session) readTimeouts(ctx context.Context, paths []string) bool {
	c := s.Conn()
	var failed atomic.Bool
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for _, p := range paths {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			b, err := call(ctx, func() ([]byte, error) {
				b, _, err := c.Get(p)
				return b, err
			})
			switch {
			case err == nil:
				s.noteTimeout(p, timeoutIn(b))
			case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNoAuth):
				s.noteTimeout(p, 0)
			default:
				failed.Store(true)
			}
		}()
	}
	wg.Wait()
	return !failed.Load()
}

// learnLiveTimeouts reads the timeouts of every herald session that keeps
// its session node where ours for this handle's node is (the election's
// office, or the session root), once per handle, before a runner waits
// for an owner that may not have heard that its node went. The owner a
// copy waits for need not be in the queue it found: its node may have
// been deleted by hand before the copy joined, leaving nothing ahead to
// read a timeout from. Its session node stays while its session lives,
// which is as long as its work may run (its runner stops the work before
// the session can expire); one gone is a session that ended, whose work
// is stopped. So the longest timeout among the live session nodes covers
// every owner whose work may still run. A session root is shared by every
// lock group that uses it: the read is made once, and only on this path.
func (h *Handle) learnLiveTimeouts(ctx context.Context) {
	q := h.q
	if !q.o.sessionProof || !h.timeoutsListed.CompareAndSwap(false, true) {
		return
	}
	h.timeoutsTried.Store(true)
	own := q.sessionNodeOf(h.t.name)
	if own == "" {
		return
	}
	dir := path.Dir(own)
	names, err := call(ctx, func() ([]string, error) {
		c, _, err := q.s.Conn().Children(dir)
		return c, err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		// Deleted, with every session node in it (ours too): nothing is
		// left to read there, now or later; the run notes may tell.
		q.s.log.Warn("the session nodes kept beside ours are gone with the node that held them (deleted by hand?), so how long an owner gone before us may still run is learned only from the run notes on this group: waiting as long as the longest session timeout this copy has seen; do not delete the session root, and give every copy the same --session-timeout",
			"dir", dir)
		names = nil
	case errors.Is(err, zk.ErrNoAuth):
		// Nothing to learn here, now or later: a runner's wait takes
		// the longest timeout it knows.
		q.s.log.Warn("cannot list the session nodes kept beside ours, to learn how long an owner gone before us may still run: waiting as long as the longest session timeout this copy has seen; give every copy the same --session-timeout, or READ on the session root",
			"dir", dir, "err", err)
		names = nil
	case err != nil:
		h.timeoutsListed.Store(false) // look again next time
		return
	}
	var live []string
	for _, n := range names {
		if p := dir + "/" + n; p != own && IsSessionNodeName(n) {
			live = append(live, p)
		}
	}
	paths := slices.DeleteFunc(slices.Clone(live), func(p string) bool {
		_, read := q.s.timeoutsRead.Load(p)
		return read
	})
	if !q.s.readTimeouts(ctx, paths) {
		h.timeoutsListed.Store(false) // read those left at the next look
	}
	// A lock's session nodes are kept in the session root, beside the
	// run notes: the listing above is theirs too.
	var rootNames *[]string
	if dir == q.o.sessionRoot {
		rootNames = &names
	}
	if !h.learnRunNoteTimeouts(ctx, q.s.noTimeoutIn(live), rootNames) {
		h.timeoutsListed.Store(false)
	}
}

// noTimeoutIn is those of the session nodes at paths that were read and
// gave no timeout: data herald did not write (an operator's set), an older
// herald's, or a node this identity may not read.
func (s *Session) noTimeoutIn(paths []string) []string {
	var out []string
	for _, p := range paths {
		if d, read := s.timeoutsRead.Load(p); read && d.(time.Duration) == 0 {
			out = append(out, p)
		}
	}
	return out
}

// learnRunNoteTimeouts reads the run notes on our group under the session
// root (see MarkRunning), which carry their session's timeout too and are
// there exactly while that session's command for our group may run: the
// timeout of an owner whose session node tells none (blind: overwritten by
// hand), or is gone with an office deleted by hand, which left the wait at
// this copy's own timeout, and its command started beside that of a frozen
// owner with a longer one (found by an adversarial test). A blind session
// none of whose notes tells its timeout is warned of. listed, when not
// nil, is the session root's listing the caller made (nil for a root
// gone or unlistable), which spares a second. It reports whether every
// read was answered.
func (h *Handle) learnRunNoteTimeouts(ctx context.Context, blind []string, listed *[]string) bool {
	root, c := h.q.o.sessionRoot, h.q.s.Conn()
	if root == "" {
		return true
	}
	var names []string
	if listed != nil {
		names = *listed
	} else {
		var err error
		names, err = call(ctx, func() ([]string, error) {
			n, _, err := c.Children(root)
			return n, err
		})
		if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrNoAuth) {
			return false
		}
	}
	told := map[int64]bool{}
	for _, n := range names {
		sid, gh, ok := parseRunNote(n)
		if !ok || gh != groupHash(h.q.parent) {
			continue
		}
		r, err := readNode(ctx, c, root+"/"+n, false)
		switch {
		case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNoAuth):
		case err != nil:
			return false
		case timeoutIn(r.data) > 0:
			h.q.s.noteTimeout(root+"/"+n, timeoutIn(r.data))
			told[sid] = true
		}
	}
	for _, p := range blind {
		if hex, ok := strings.CutSuffix(strings.TrimPrefix(path.Base(p), "session-"), "-live"); ok {
			if sid, err := strconv.ParseUint(hex, 16, 64); err == nil && !told[int64(sid)] {
				h.q.s.log.Warn("a live session node holds no session timeout herald can read (written over by hand, an older herald's, or a dead runner's noted by its watchdog), and no run note of its session on this group tells it: waiting as long as the longest session timeout this copy has seen; delete nothing under the office or the session root, and give every copy the same --session-timeout",
					"node", p, "group", h.q.parent)
			}
		}
	}
	return true
}

// TimeoutsUnread reports whether a look at the predecessor (see
// PredecessorReleased) found live session nodes whose timeouts it could
// not read yet: LongestTimeoutSeen may then be short of a deposed
// owner's, and a runner waiting the bound for it looks again, now and
// then, rather than only when a watch fires, before it trusts the bound.
func (h *Handle) TimeoutsUnread() bool {
	return h.timeoutsTried.Load() && !h.timeoutsListed.Load()
}

// IsSessionNodeName reports whether n is named as a session node.
func IsSessionNodeName(n string) bool {
	hex, ok := strings.CutPrefix(n, "session-")
	if !ok {
		return false
	}
	hex, ok = strings.CutSuffix(hex, "-live")
	_, err := strconv.ParseUint(hex, 16, 64)
	return ok && len(hex) == 16 && err == nil
}
