package elect

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// frame is one reply as the server sends it: length, then a body that
// starts with the xid.
func frame(xid int32, body int) []byte {
	b := make([]byte, 8+body)
	binary.BigEndian.PutUint32(b, uint32(4+body))
	binary.BigEndian.PutUint32(b[4:], uint32(xid))
	return b
}

// request is a request's frame: length, xid, opcode, then body bytes.
func request(op int32, body int) []byte {
	b := make([]byte, 12+body)
	binary.BigEndian.PutUint32(b, uint32(8+body))
	binary.BigEndian.PutUint32(b[8:], uint32(op))
	return b
}

// The reply stream is followed however the client's reads cut it: each
// reply answers the oldest request, a watch event answers none, and the
// connect response (the first frame, no xid) answers the connect request.
func TestAnswersFollowTheReplyStream(t *testing.T) {
	for round := range 200 {
		var got []int64
		a := answers{answered: func(at int64) { got = append(got, at) }}
		a.written(nil) // the connect request
		for range 3 {
			a.written(request(4, 20))
		}
		var sent []int64
		for _, r := range a.sent {
			sent = append(sent, r.at)
		}
		connect := make([]byte, 4+36)
		binary.BigEndian.PutUint32(connect, 36)
		binary.BigEndian.PutUint32(connect[4:], 0xffffffff) // would read as a watch event's xid
		var stream []byte
		stream = append(stream, connect...)
		stream = append(stream, frame(1, 20)...)
		stream = append(stream, frame(-1, 50)...) // a watch event
		stream = append(stream, frame(-2, 0)...)  // a ping's reply: an empty body past the xid
		stream = append(stream, frame(3, 1)...)
		r := rand.New(rand.NewPCG(uint64(round), 7))
		for len(stream) > 0 {
			n := 1 + r.IntN(min(len(stream), 13))
			a.read(stream[:n])
			stream = stream[n:]
		}
		if len(got) != 3 || got[0] != sent[0] || got[1] != sent[1] || got[2] != sent[2] {
			t.Fatalf("round %d: answered %v; want the three requests' send times %v in order", round, got, sent)
		}
		if len(a.sent) != 0 || a.rest != 0 || a.headN != 0 {
			t.Fatalf("round %d: left %d unanswered, %d bytes of a frame, %d of a length", round, len(a.sent), a.rest, a.headN)
		}
	}
}

// On a connection that replaces an earlier one, replies vouch for nothing
// until the one to the client's set-watches request has come (the events
// of nodes gone meanwhile come just before it); every reply is heard. A
// set-watches request that may have another after it (near the client's
// split size) does not open the gate.
func TestAnswersOnANewConnectionWaitForTheWatchesSetAgain(t *testing.T) {
	for _, tc := range []struct {
		name       string
		setWatches []byte
		vouched    int // of the replies after the first
	}{
		{"set-watches", request(opSetWatches, 200), 2},
		{"set-watches2", request(opSetWatches2, 200), 2},
		{"a set-watches that may go on", request(opSetWatches, setWatchesMayGoOn), 0},
	} {
		var vouched, heard []int64
		a := answers{gated: true, answered: func(at int64) { vouched = append(vouched, at) }, heard: func(at int64) { heard = append(heard, at) }}
		a.written(nil)
		a.written(request(4, 20)) // a getData written before the watches are set again
		a.written(tc.setWatches)
		a.written(request(4, 20))
		var at []int64
		for i := range a.sent {
			a.sent[i].at = int64(i+1) * 1000 // told apart however fast they were written
			at = append(at, a.sent[i].at)
		}
		connect := make([]byte, 4+36)
		binary.BigEndian.PutUint32(connect, 36)
		a.read(connect)
		a.read(frame(1, 20))
		if len(vouched) != 0 || len(heard) != 1 {
			t.Fatalf("%s: a reply before the watches were set again vouched (%v) or went unheard (%v)", tc.name, vouched, heard)
		}
		a.read(frame(-1, 40)) // the event of a node gone meanwhile
		a.read(frame(2, 0))
		a.read(frame(3, 20))
		if len(heard) != 3 {
			t.Fatalf("%s: heard %d replies, want 3", tc.name, len(heard))
		}
		if len(vouched) != tc.vouched || tc.vouched > 0 && (vouched[0] != at[1] || vouched[1] != at[2]) {
			t.Fatalf("%s: vouched %v, want the last %d of %v", tc.name, vouched, tc.vouched, at)
		}
	}
}
