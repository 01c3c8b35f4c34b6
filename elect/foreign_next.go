package elect

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// ForeignInGroup reports whether the group held, at any listing of the
// owner's guard, a participant that owns as soon as our node goes: a
// queue node a Curator, Kazoo or go-zookeeper client holds (the classic
// recipe's too), or, for an owner given WaitsForPredecessor, a herald node
// whose session does not say it waits (a program using Lock or Election,
// an older herald). It stays true once seen: an operator's deleteall
// deletes the client's node before or after ours, and the client makes it
// again at once (Curator does), so the listing between the two tells
// nothing of who comes next. Unlike a herald runner, such a participant
// waits for no record that our work stopped (PredecessorReleased) and no
// bound. So an owner whose node was deleted by hand must stop its work at
// once, not within GiveBackDelay, where one was there.
func (h *Handle) ForeignInGroup() bool { return h.foreign.Load() }

// noteForeign sets ForeignInGroup when the guard's listing children shows
// such a participant (see ownsAtOnce), and looks no further once it is
// set. A look that fails counts as one, unless the guard's state changed
// meanwhile (the connection lost, say): a kill too soon costs the command
// its grace, a kill too late leaves two owners. The reads it needs go out
// at once, one round trip for all: one after another, a new owner with N
// runners behind it held the monitor N round trips, deaf meanwhile to our
// node's deletion and to a blind client's join (found by a review).
func (h *Handle) noteForeign(ctx context.Context, children []string) {
	looks := h.looksFor(children)
	var wg sync.WaitGroup
	for i := range looks {
		wg.Go(func() { looks[i].at, looks[i].err = h.ownsAtOnce(ctx, &looks[i]) })
	}
	wg.Wait()
	for _, l := range looks {
		switch {
		case l.err != nil && ctx.Err() != nil:
			return
		case l.at || l.err != nil:
			h.foreign.Store(true)
			return
		case l.session == 0:
			h.markInert(l.node, true)
		default:
			if h.waiting == nil {
				h.waiting = map[int64]bool{}
			}
			h.waiting[l.session] = true
		}
	}
}

// A look is a read noteForeign makes of a queue node named like a foreign
// client's (session 0), or of the session node of a herald session.
type look struct {
	node    string
	session int64
	at      bool // the node's participant owns at once
	err     error
}

// looksFor is the looks the listing children calls for, none once
// ForeignInGroup is set: one per node named like a client's and not known
// inert, and, for an owner given WaitsForPredecessor, one per herald
// session not known to wait, ours aside.
func (h *Handle) looksFor(children []string) []look {
	if h.foreign.Load() {
		return nil
	}
	var looks []look
	seen := map[int64]bool{}
	for _, c := range children {
		if _, ok := ParseSequence(c); !ok || c == h.t.name || h.inert[c] {
			continue
		}
		id, _, herald := heraldNode(c)
		switch {
		case !herald:
			looks = append(looks, look{node: c})
		case h.q.o.waits && id.session != h.q.s.ID() && !h.waiting[id.session] && !seen[id.session]:
			seen[id.session] = true
			looks = append(looks, look{node: c, session: id.session})
		}
	}
	return looks
}

// lastLook lists the group once more as our node is found gone, unless
// the guard is off or ForeignInGroup is set already: a participant that
// owns at once and joined just before the deletion fires the guard's
// watch as the deletion fires our node's, and the monitor, taking the
// deletion first, never listed it. A runner then gave its command the
// grace beside that participant's tenure (found by a review). A group
// gone with our node (deleteall) counts as one, as does a look that fails
// or is cut short (the connection lost meanwhile): this is the last look,
// and a kill too soon costs the command its grace, one too late leaves
// two owners. A client whose join reached us with the deleteall was never
// listed, and Curator makes the group and its node again at once and owns:
// counted as nobody, a runner gave its command the grace beside it (found
// by a review). In a group of runners it costs the stop a round trip or
// two, where the next owner waits for our record (or run note) anyway, and
// a deleteall of the group the command's grace.
func (h *Handle) lastLook(guarding bool, changed <-chan struct{}) {
	if !guarding || h.foreign.Load() || h.q.s.unheardPastTimeout() {
		return
	}
	sctx, cancel := stateCtx(changed, h.stop)
	defer cancel()
	// Bounded: the look comes before our word that ownership is lost, and
	// so before the runner's command gets any signal. A server that
	// answered nothing held that word until the client gave the
	// connection up (2.7 s of 6 s), where a client next in
	// line on another member may own at once and the grace spared is a
	// sixth (found by a review).
	ctx, cancelLook := context.WithTimeout(sctx, h.q.s.Timeout()/12)
	defer cancelLook()
	if f := lastLooked.Load(); f != nil {
		(*f)(h.NodePath())
	}
	c, err := call(ctx, func() ([]string, error) {
		c, _, err := h.q.s.Conn().Children(h.q.parent)
		return c, err
	})
	switch {
	case err != nil: // the group gone (zk.ErrNoNode) among them
		h.foreign.Store(true)
	default:
		h.noteForeign(ctx, c)
		if ctx.Err() != nil {
			h.foreign.Store(true)
		}
	}
}

// ownsAtOnce reports whether the participant of l's node would own as
// soon as our node goes. A node named like a foreign client's counts
// unless it is there and no session holds it: such a node
// (made by hand, or left over) owns nothing, whatever its name. Counted
// by name alone, such a leftover cost a group of runners the command's
// grace at every deletion by hand (found by a review). A herald node
// counts, for an owner that waits itself, when its session does not say
// it waits (sessionWaits): a library program behind `herald lock` owned
// as Acquire returned, beside the command for the sixth of the timeout
// its runner gave it (found by a review). It touches no map of the
// monitor's: noteForeign runs it for every look at once.
func (h *Handle) ownsAtOnce(ctx context.Context, l *look) (bool, error) {
	if l.session == 0 {
		exists, client, err := clientHolds(ctx, h.q.s.Conn(), h.q.full(l.node))
		// Gone, it was a client that left, or one a deleteall took
		// that makes its node again at once (Curator does).
		return err != nil || client || !exists, err
	}
	waits, err := h.sessionWaits(ctx, l.node, l.session)
	return !waits, err
}

// sessionWaits reports whether the session that made the herald node c
// says, on its session node, that it waits for its predecessor's stop
// (WaitsForPredecessor). One without a
// session node (none kept, or kept where we cannot read it) does not say
// so, nor does a node under its name that another session holds: anyone
// may create under the session root.
func (h *Handle) sessionWaits(ctx context.Context, c string, session int64) (bool, error) {
	p := h.q.sessionNodeOf(c)
	if p == "" {
		return false, nil
	}
	if f := waitsLooked.Load(); f != nil {
		(*f)(h.NodePath(), p)
	}
	r, err := readNode(ctx, h.q.s.Conn(), p, false)
	switch {
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNoAuth):
		return false, nil
	case err != nil:
		return false, err
	}
	var n sessionNote
	ok := json.Unmarshal(r.data, &n) == nil && n.Herald != 0 && n.Waits && r.st.EphemeralOwner == session
	return ok, nil
}

// foreignIn reports whether children holds a queue node herald did not
// write, inert ones (named like a client's, but none: see isClient) aside.
func foreignIn(children []string, inert map[string]bool) bool {
	for _, c := range children {
		if _, ok := ParseSequence(c); !ok || inert[c] {
			continue
		}
		if _, _, ok := heraldNode(c); !ok {
			return true
		}
	}
	return false
}

// waitsLooked, when set (by tests), is told of each session node an
// owner's guard reads for its waits word, before it reads it.
var waitsLooked atomic.Pointer[func(owner, sessionNode string)]

// lastLooked, when set (by tests), is told of each owner's last look at
// its group (lastLook), before the look.
var lastLooked atomic.Pointer[func(owner string)]
