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

// The reply stream is followed however the client's reads cut it: each
// reply answers the oldest request, a watch event answers none, and the
// connect response (the first frame, no xid) answers the connect request.
func TestAnswersFollowTheReplyStream(t *testing.T) {
	for round := range 200 {
		var got []int64
		a := answers{answered: func(at int64) { got = append(got, at) }}
		a.written() // the connect request
		for range 3 {
			a.written()
		}
		sent := append([]int64(nil), a.sent...)
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
