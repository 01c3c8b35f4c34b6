package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// ErrBadTarget is returned by New for a target that is not host:port.
var ErrBadTarget = errors.New("faultproxy: bad target address")

const dialTimeout = 5 * time.Second

// Proxy relays TCP connections from its loopback address to one target
// and injects faults on command. Its methods are safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	ctx    context.Context // ends on Close; bounds dials
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	pairs     map[*pair]struct{}
	closed    bool
	refuse    bool
	blackhole bool
	unblocked chan struct{} // closed whenever blackhole is off
	dropOps   map[int32]bool
	dropReqs  map[int32]bool // see DropRequestTo
	dropped   int
	// holdOps, held and release: see HoldReplyTo.
	holdOps map[int32]bool
	held    chan struct{}
	release chan struct{}
	delay   time.Duration
	// watchOrder and eventGap: see OrderSetWatches and SpaceEvents.
	watchOrder func([]string)
	eventGap   time.Duration
	requests   map[reqKey]int // see Requests
}

// New starts a proxy for target ("host:port") listening on 127.0.0.1:0.
func New(target string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("%w %q: want host:port, e.g. 127.0.0.1:2181: %v", ErrBadTarget, target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	unblocked := make(chan struct{})
	close(unblocked)
	p := &Proxy{target: target, ln: ln, ctx: ctx, cancel: cancel, pairs: make(map[*pair]struct{}), unblocked: unblocked}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the proxy's address; give it to the client instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the address the proxy relays to.
func (p *Proxy) Target() string { return p.target }

// Close stops accepting, closes every connection and waits for the relay
// goroutines to end. Calling it again does nothing.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

// Cut closes every current connection, as a network reset would; new
// connections are accepted as usual.
func (p *Proxy) Cut() {
	p.mu.Lock()
	pairs := make([]*pair, 0, len(p.pairs))
	for c := range p.pairs {
		pairs = append(pairs, c)
	}
	p.mu.Unlock()
	for _, c := range pairs {
		c.close()
	}
}

// Blackhole, while on, forwards nothing in either direction on new and
// existing connections, like a network partition: bytes and closes are
// held (not lost) and delivered when it is turned off. A client's pings go
// unanswered, so its session expires on the server.
func (p *Proxy) Blackhole(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case on && !p.blackhole:
		p.unblocked = make(chan struct{})
	case !on && p.blackhole:
		close(p.unblocked)
	}
	p.blackhole = on
}

// Delay makes every frame on connections accepted from now on arrive d
// later than it would, in each direction, as over a network between
// machines: a request's round trip gains 2d. Frames keep their order, and
// each waits d from when the proxy read it, so frames sent together
// arrive together. Connections accepted before keep the delay they had
// (Cut them to apply it). Go's timers wake about a millisecond late at
// best on Linux, so a d below that behaves as about a millisecond.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = max(d, 0)
	p.mu.Unlock()
}

// Refuse, while on, closes new connections as soon as they are accepted.
// Existing connections are left alone (combine with Cut to drop them).
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}

// DropReplyTo arms a one-shot fault: the next client request, on any
// connection, whose opcode is one of opcodes (OpCreate, OpMulti, ...) is
// forwarded to the server, but its reply is swallowed and that connection
// cut. The client sees connection loss although the server executed the
// request. Calling it again replaces the armed set; no opcodes disarms it.
func (p *Proxy) DropReplyTo(opcodes ...int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(opcodes) == 0 {
		p.dropOps = nil
		return
	}
	p.dropOps = make(map[int32]bool, len(opcodes))
	for _, op := range opcodes {
		p.dropOps[op] = true
	}
}

// DropRequestTo arms a one-shot fault: the next client request, on any
// connection, whose opcode is one of opcodes is swallowed, never reaching
// the server, and that connection cut, as ZooKeeper itself closes the
// connection of a request over its jute.maxbuffer. The client sees
// connection loss for a request that did nothing. Checked before
// HoldReplyTo, which a request it swallows does not disarm. Calling it
// again replaces the armed set; no opcodes disarms it.
func (p *Proxy) DropRequestTo(opcodes ...int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropReqs = nil
	if len(opcodes) > 0 {
		p.dropReqs = make(map[int32]bool, len(opcodes))
	}
	for _, op := range opcodes {
		p.dropReqs[op] = true
	}
}

// takeDropRequest disarms and reports true when op is armed by
// DropRequestTo.
func (p *Proxy) takeDropRequest(op int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.dropReqs[op] {
		return false
	}
	p.dropReqs = nil
	p.dropped++
	return true
}

// HoldReplyTo arms a one-shot fault: the next client request, on any
// connection, whose opcode is one of opcodes is forwarded to the server,
// and its reply, with everything after it on that connection, is held
// until Release. The connection stays open, so the client sees a request
// in flight, as behind a slow network or server. The channel returned is
// closed once that request was forwarded. Arming it again replaces the
// set; a hold already in place stays until Release.
func (p *Proxy) HoldReplyTo(opcodes ...int32) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdOps = make(map[int32]bool, len(opcodes))
	for _, op := range opcodes {
		p.holdOps[op] = true
	}
	p.held = make(chan struct{})
	if p.release == nil {
		p.release = make(chan struct{})
	}
	return p.held
}

// Release lets every reply held by HoldReplyTo go on.
func (p *Proxy) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.release != nil {
		close(p.release)
		p.release = nil
	}
}

// takeHold disarms and, when op is armed, returns the channel to close
// once the request is forwarded and the one whose close releases its
// reply.
func (p *Proxy) takeHold(op int32) (held, release chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.holdOps[op] {
		return nil, nil
	}
	p.holdOps = nil
	return p.held, p.release
}

// Dropped is the number of replies swallowed by DropReplyTo, and of
// requests by DropRequestTo, so far.
func (p *Proxy) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// Conns is the number of connections currently relayed.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pairs)
}

// takeDrop disarms and reports true when op is armed.
func (p *Proxy) takeDrop(op int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.dropOps[op] {
		return false
	}
	p.dropOps = nil
	return true
}

func (p *Proxy) countDrop() {
	p.mu.Lock()
	p.dropped++
	p.mu.Unlock()
}

// gate blocks while the blackhole is on. It returns false when the
// connection was closed meanwhile.
func (p *Proxy) gate(c *pair) bool {
	for {
		p.mu.Lock()
		on, ch := p.blackhole, p.unblocked
		p.mu.Unlock()
		if !on {
			select {
			case <-c.done:
				return false
			default:
				return true
			}
		}
		select {
		case <-ch:
		case <-c.done:
			return false
		}
	}
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a transient accept error; the listener still works
		}
		p.mu.Lock()
		refuse := p.refuse || p.closed
		p.mu.Unlock()
		if refuse {
			conn.Close()
			continue
		}
		p.wg.Add(1)
		go p.relay(conn)
	}
}

// relay dials the target for one accepted client and runs both directions.
func (p *Proxy) relay(client net.Conn) {
	defer p.wg.Done()
	d := net.Dialer{Timeout: dialTimeout}
	server, err := d.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		client.Close() // the client sees what it would see from a dead server
		return
	}
	p.mu.Lock()
	delay := p.delay
	p.mu.Unlock()
	c := newPair(client, server, delay)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.close()
		return
	}
	p.pairs[c] = struct{}{}
	p.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.clientToServer(c) }()
	go func() { defer wg.Done(); p.serverToClient(c) }()
	wg.Wait()

	p.mu.Lock()
	delete(p.pairs, c)
	p.mu.Unlock()
}
