package faultproxy

import (
	"net"
	"sync"
	"sync/atomic"
)

// pair is one proxied connection: the client's socket and ours to the
// target.
type pair struct {
	client, server net.Conn
	done           chan struct{}
	once           sync.Once

	// dropXid is the xid of the request whose reply must be swallowed,
	// valid once dropArmed is set.
	dropXid   atomic.Int32
	dropArmed atomic.Bool
}

func newPair(client, server net.Conn) *pair {
	return &pair{client: client, server: server, done: make(chan struct{})}
}

func (c *pair) close() {
	c.once.Do(func() {
		c.client.Close()
		c.server.Close()
		close(c.done)
	})
}

// clientToServer relays requests. The first frame is the connect request;
// after it, a request whose opcode DropReplyTo armed marks its xid.
func (p *Proxy) clientToServer(c *pair) {
	defer c.close()
	f := framer{r: c.client}
	first := true
	for {
		b, isFrame, err := f.next()
		if err != nil {
			p.gate(c) // a partitioned peer does not see the close either
			return
		}
		if isFrame && !first {
			if xid, op, ok := requestHeader(b); ok && p.takeDrop(op) {
				c.dropXid.Store(xid)
				c.dropArmed.Store(true)
			}
		}
		first = false
		if !p.gate(c) {
			return
		}
		if _, err := c.server.Write(b); err != nil {
			return
		}
	}
}

// serverToClient relays replies, swallowing the one DropReplyTo chose and
// cutting the connection in its place.
func (p *Proxy) serverToClient(c *pair) {
	defer c.close()
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
		first = false
		if !p.gate(c) {
			return
		}
		if _, err := c.client.Write(b); err != nil {
			return
		}
	}
}
