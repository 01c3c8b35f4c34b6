package faultproxy

import (
	"encoding/binary"
	"time"
)

// Set-watches opcodes: a client that reconnects within its session sends
// the paths it watches again, and the server answers with an event for
// each watched node that changed or went while the client was away.
const (
	OpSetWatches  int32 = 101
	OpSetWatches2 int32 = 105
)

// OrderSetWatches, while order is not nil, rewrites every set-watches
// request: each of its path lists is passed to order, which reorders it in
// place, before the request goes on. The server sends the events of nodes
// that went while a client was away in the order of these lists, and a
// client builds them in an order of its own (go-zookeeper walks a map, so
// any order); this makes it the test's.
func (p *Proxy) OrderSetWatches(order func(paths []string)) {
	p.mu.Lock()
	p.watchOrder = order
	p.mu.Unlock()
}

// SpaceEvents, while d > 0, holds each watch event the server sends for d
// before it goes on (and the frames behind it with it): a client then acts
// on one event before the next reaches it, as it may whenever two events
// are sent a moment apart.
func (p *Proxy) SpaceEvents(d time.Duration) {
	p.mu.Lock()
	p.eventGap = max(d, 0)
	p.mu.Unlock()
}

func (p *Proxy) setWatchesOrder() func([]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.watchOrder
}

func (p *Proxy) eventSpacing() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.eventGap
}

// reorderSetWatches returns frame, a set-watches request, with each of its
// path lists reordered by order. The body is the relative zxid (8 bytes),
// then the lists, each a count and that many length-prefixed strings. A
// frame that does not parse so is returned as it is.
func reorderSetWatches(frame []byte, order func([]string)) []byte {
	const head = 4 + 4 + 4 + 8 // length, xid, opcode, relative zxid
	if len(frame) < head {
		return frame
	}
	out := append([]byte(nil), frame[:head]...)
	rest := frame[head:]
	for len(rest) > 0 {
		if len(rest) < 4 {
			return frame
		}
		n := int(int32(binary.BigEndian.Uint32(rest)))
		rest = rest[4:]
		if n < 0 || n > len(rest)/4 {
			return frame
		}
		paths := make([]string, 0, n)
		for range n {
			if len(rest) < 4 {
				return frame
			}
			l := int(int32(binary.BigEndian.Uint32(rest)))
			if l < 0 || l > len(rest)-4 {
				return frame
			}
			paths = append(paths, string(rest[4:4+l]))
			rest = rest[4+l:]
		}
		order(paths)
		out = binary.BigEndian.AppendUint32(out, uint32(len(paths)))
		for _, s := range paths {
			out = binary.BigEndian.AppendUint32(out, uint32(len(s)))
			out = append(out, s...)
		}
	}
	if len(out) != len(frame) {
		return frame // order must only reorder
	}
	return out
}
