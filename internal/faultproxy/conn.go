package faultproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// pair is one proxied connection: the client's socket and ours to the
// target.
type pair struct {
	client, server net.Conn
	done           chan struct{}
	once           sync.Once
	// delay is how long each frame waits before it is forwarded (see
	// Proxy.Delay), fixed when the connection was accepted.
	delay time.Duration

	// dropXid is the xid of the request whose reply must be swallowed,
	// valid once dropArmed is set.
	dropXid   atomic.Int32
	dropArmed atomic.Bool

	// hold, when set, is the xid of the reply HoldReplyTo holds and the
	// channel whose close lets it go on.
	hold atomic.Pointer[heldReply]
}

// heldReply is a reply HoldReplyTo holds: its xid and what releases it.
type heldReply struct {
	xid     int32
	release chan struct{}
}

func newPair(client, server net.Conn, delay time.Duration) *pair {
	return &pair{client: client, server: server, done: make(chan struct{}), delay: delay}
}

func (c *pair) close() {
	c.once.Do(func() {
		c.client.Close()
		c.server.Close()
		close(c.done)
	})
}

// clientToServer relays requests. The first frame is the connect request;
// after it, a request whose opcode DropRequestTo armed ends the connection
// unsent, and one whose opcode DropReplyTo armed marks its xid.
func (p *Proxy) clientToServer(c *pair) {
	defer c.close()
	out := p.sender(c, c.server)
	defer out.flush()
	f := framer{r: c.client}
	first := true
	for {
		b, isFrame, err := f.next()
		if err != nil {
			p.gate(c) // a partitioned peer does not see the close either
			return
		}
		var forwarded chan struct{} // closed once b went on: HoldReplyTo
		if isFrame && !first {
			xid, op, ok := requestHeader(b)
			if ok && p.takeDropRequest(op) {
				return // swallowed: the deferred close cuts the connection
			}
			if ok && p.takeDrop(op) {
				c.dropXid.Store(xid)
				c.dropArmed.Store(true)
			}
			if ok {
				p.countRequest(op, b)
				if held, release := p.takeHold(op); held != nil {
					c.hold.Store(&heldReply{xid: xid, release: release})
					forwarded = held
				}
			}
			if order := p.setWatchesOrder(); ok && order != nil && (op == OpSetWatches || op == OpSetWatches2) {
				b = reorderSetWatches(b, order)
			}
		}
		first = false
		if !out.send(b) {
			return
		}
		if forwarded != nil {
			close(forwarded)
		}
	}
}

// serverToClient relays replies, swallowing the one DropReplyTo chose and
// cutting the connection in its place, and holding the one HoldReplyTo
// chose (and so every reply after it) until Release.
func (p *Proxy) serverToClient(c *pair) {
	defer c.close()
	out := p.sender(c, c.client)
	defer out.flush()
	f := framer{r: c.server}
	first := true
	for {
		b, isFrame, err := f.next()
		if err != nil {
			p.gate(c)
			return
		}
		if isFrame && !first && c.dropArmed.Load() {
			if xid, ok := replyXid(b); ok && xid == c.dropXid.Load() {
				p.countDrop()
				return
			}
		}
		if h := c.hold.Load(); isFrame && !first && h != nil {
			if xid, ok := replyXid(b); ok && xid == h.xid {
				select {
				case <-h.release:
					c.hold.Store(nil)
				case <-c.done:
					return
				}
			}
		}
		if gap := p.eventSpacing(); isFrame && !first && gap > 0 {
			if xid, ok := replyXid(b); ok && xid == -1 {
				select {
				case <-time.After(gap):
				case <-c.done:
					return
				}
			}
		}
		first = false
		if !out.send(b) {
			return
		}
	}
}

// sender forwards one direction's frames to w: at once, or each c.delay
// after it was read.
type sender struct {
	p     *Proxy
	c     *pair
	w     net.Conn
	queue chan delayed  // nil without a delay
	sent  chan struct{} // closed once the queue is drained
	ok    atomic.Bool   // false once a write failed
}

// delayed is a frame and when it is due.
type delayed struct {
	b   []byte
	due time.Time
}

// delayQueue bounds the frames in flight one way on a delayed connection;
// a reader that gets this far ahead waits, as behind a full network buffer.
const delayQueue = 1024

func (p *Proxy) sender(c *pair, w net.Conn) *sender {
	s := &sender{p: p, c: c, w: w}
	s.ok.Store(true)
	if c.delay > 0 {
		s.queue, s.sent = make(chan delayed, delayQueue), make(chan struct{})
		go s.forward()
	}
	return s
}

// send forwards b, or queues it to be forwarded when due. It reports false
// once the connection is closed or a write failed.
func (s *sender) send(b []byte) bool {
	if s.queue == nil {
		return s.p.gate(s.c) && s.write(b)
	}
	select {
	case s.queue <- delayed{b: b, due: time.Now().Add(s.c.delay)}:
		return s.ok.Load()
	case <-s.c.done:
		return false
	}
}

func (s *sender) write(b []byte) bool {
	if _, err := s.w.Write(b); err != nil {
		s.ok.Store(false)
		return false
	}
	return true
}

// forward writes the queued frames as they come due, in order. Each is
// delayed from when it was read, so frames read together arrive together.
func (s *sender) forward() {
	defer close(s.sent)
	timer := time.NewTimer(0)
	<-timer.C
	for f := range s.queue {
		if wait := time.Until(f.due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-s.c.done:
				return
			}
		}
		if !s.p.gate(s.c) || !s.write(f.b) {
			return
		}
	}
}

// flush, as the direction ends, lets the frames already read arrive
// before the connection closes, as a network delivers data before the
// close that follows it.
func (s *sender) flush() {
	if s.queue == nil {
		return
	}
	close(s.queue)
	<-s.sent
}
