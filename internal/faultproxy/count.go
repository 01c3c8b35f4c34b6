package faultproxy

import "encoding/binary"

// reqKey is a request's opcode and the path it names.
type reqKey struct {
	op   int32
	path string
}

// Requests is how many client requests with opcode op naming path (the
// first field of every request on one node) the proxy has forwarded, on
// every connection: a test counts what a call costs.
func (p *Proxy) Requests(op int32, path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests[reqKey{op, path}]
}

// countRequest counts frame, a request with opcode op, by the path it
// names; a multi, which names none, is not counted.
func (p *Proxy) countRequest(op int32, frame []byte) {
	const head = 4 + 4 + 4 // length, xid, opcode
	if op == OpMulti || len(frame) < head+4 {
		return
	}
	n := int(int32(binary.BigEndian.Uint32(frame[head : head+4])))
	if n < 0 || head+4+n > len(frame) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.requests == nil {
		p.requests = map[reqKey]int{}
	}
	p.requests[reqKey{op, string(frame[head+4 : head+4+n])}]++
}
