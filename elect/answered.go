package elect

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"
)

// answers tracks, on one connection, when the requests whose replies have
// come were sent: ZooKeeper answers a session's requests in the order they
// were sent, and delivers a watch event before the reply to any request it
// processes after the change that fired it. So when a reply comes with no
// event before it, every node the session watches still existed when the
// server processed that request: after it was sent. That is the newest
// moment the session can vouch for what it watches, and what an observer
// that loses its connection keeps as the last time it saw the owner hold
// (Session.Answered).
//
// The client writes each request in one Write and reads each reply as a
// 4-byte length followed by its body, whose first 4 bytes are the xid
// (-1 for a watch event, which answers nothing). The first request and
// reply on a connection are the connect handshake, which has no xid.
//
// That order holds along one connection. On a connection that replaces an
// earlier one of the session (gated), the client first sets its watches
// again, and the server sends the events of the watched nodes that changed
// meanwhile just before its reply to that request; the client sends it
// from a goroutine of its own, so requests it writes before may be answered
// before those events come. So on such a connection a reply vouches for
// nothing (it is only heard: the server heard from the session) until the
// reply to the set-watches request has come: the last one, when the
// client splits its watches over several (a request near the client's
// 128 KiB limit may have one after it; such a connection vouches for
// nothing more, which holds back Answered, never moves it wrong).
type answers struct {
	mu       sync.Mutex
	sent     []sent // requests not yet answered, oldest first
	gated    bool
	wrote    bool    // the connect request went
	frames   int     // replies read so far, the connect response included
	head     [4]byte // the frame length being read
	headN    int
	rest     int     // bytes of the current frame's body still to come
	xid      [4]byte // the body's first bytes
	xidN     int
	answered func(int64) // told each vouching reply's request's send time
	heard    func(int64) // told each answered request's send time
	opened   func()      // told when a gated connection starts to vouch
}

// sent is a request written: when (unix ns), and whether it sets the
// session's watches again (last: and is the last to).
type sent struct {
	at               int64
	setWatches, last bool
}

// Set-watches opcodes, and the size from which go-zookeeper's set-watches
// request may have another after it (it splits them at 128 KiB; no path
// is near 64 KiB long).
const (
	opSetWatches      = 101
	opSetWatches2     = 105
	setWatchesMayGoOn = 64 << 10
)

// written notes one request written: p, its frame.
func (a *answers) written(p []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.wrote {
		a.wrote = true // the connect request: answered by the first frame
		return
	}
	r := sent{at: time.Now().UnixNano()}
	if len(p) >= 12 {
		op := int32(binary.BigEndian.Uint32(p[8:12]))
		r.setWatches = op == opSetWatches || op == opSetWatches2
		r.last = r.setWatches && len(p) < setWatchesMayGoOn
	}
	a.sent = append(a.sent, r)
}

// read follows the reply stream through p, bytes the client has just
// read, and reports each request answered.
func (a *answers) read(p []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for len(p) > 0 {
		if a.rest == 0 {
			n := copy(a.head[a.headN:], p)
			a.headN += n
			p = p[n:]
			if a.headN < 4 {
				return
			}
			a.headN, a.xidN = 0, 0
			a.rest = int(binary.BigEndian.Uint32(a.head[:]))
			a.frames++
			continue
		}
		if a.frames > 1 && a.xidN < 4 {
			n := copy(a.xid[a.xidN:min(4, a.xidN+a.rest)], p)
			a.xidN += n
			a.rest -= n
			p = p[n:]
			if a.xidN == 4 {
				a.reply(int32(binary.BigEndian.Uint32(a.xid[:])))
			}
			continue
		}
		n := min(a.rest, len(p))
		a.rest -= n
		p = p[n:]
	}
}

// reply takes the oldest request off the list unless the frame is a watch
// event.
func (a *answers) reply(xid int32) {
	if xid == -1 || len(a.sent) == 0 {
		return
	}
	r := a.sent[0]
	a.sent = a.sent[1:]
	if a.heard != nil {
		a.heard(r.at)
	}
	if r.last && a.gated {
		a.gated = false // its events came before it
		if a.opened != nil {
			a.opened()
		}
	}
	if !a.gated && a.answered != nil {
		a.answered(r.at)
	}
}

// Answered is when the newest request ZooKeeper has answered on this
// session was sent (zero before the first): every node the session watched
// then, and whose watch had not fired when that reply came, still existed
// after that moment.
func (s *Session) Answered() time.Time {
	ns := s.answered.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// heardLately reports whether ZooKeeper answered a request sent less than
// half the session timeout ago: the server heard from the session after
// that send, so the session cannot have expired since. It is false after
// the process stalled (SIGSTOP, a paused VM) for longer: what it reads
// then may have been queued for it before its session expired (the
// server writes the events, then closes the connection), and only a
// round trip tells.
func (s *Session) heardLately() bool {
	a := s.heard()
	return !a.IsZero() && time.Since(a) < s.timeout/2
}

// unheardPastTimeout reports whether ZooKeeper has answered nothing the
// session sent within its whole timeout, as after the process stalled
// that long: the servers, which expire a session they have not heard
// from for the timeout, have then expired it, and a deletion of its
// node read now is most likely that expiry's.
func (s *Session) unheardPastTimeout() bool {
	a := s.heard()
	return !a.IsZero() && time.Since(a) >= s.timeout
}

// heard is when the newest request ZooKeeper has answered on this session
// was sent (zero before the first): the server heard from the session
// after that moment. It is Answered, but for replies on a new connection
// that vouch for nothing yet (see answers).
func (s *Session) heard() time.Time {
	ns := s.heardAt.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// noteAnswered moves Answered forward to at (unix ns).
func (s *Session) noteAnswered(at int64) { moveTo(&s.answered, at) }

// noteHeard moves heard forward to at (unix ns).
func (s *Session) noteHeard(at int64) { moveTo(&s.heardAt, at) }

// moveTo moves v forward to at.
func moveTo(v *atomic.Int64, at int64) {
	for {
		cur := v.Load()
		if at <= cur || v.CompareAndSwap(cur, at) {
			return
		}
	}
}
