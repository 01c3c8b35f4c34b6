package faultproxy

import (
	"encoding/binary"
	"io"
)

// ZooKeeper opcodes for DropReplyTo.
const (
	OpCreate       int32 = 1
	OpDelete       int32 = 2
	OpExists       int32 = 3
	OpGetData      int32 = 4
	OpSetData      int32 = 5
	OpSync         int32 = 9
	OpGetChildren2 int32 = 12
	OpCheck        int32 = 13
	OpMulti        int32 = 14
	OpCreate2      int32 = 15
)

// maxFrame is far above any frame ZooKeeper sends (jute.maxbuffer is 1MB by
// default). A larger length means the bytes are not ZooKeeper framing, for
// example a four-letter command; the stream is then relayed as raw bytes.
const maxFrame = 64 << 20

const rawChunk = 32 << 10

// framer reads one direction of a connection frame by frame: a 4-byte
// big-endian length, then that many bytes. Frames are returned whole,
// length prefix included, ready to forward.
type framer struct {
	r   io.Reader
	raw bool
}

// next returns the next frame, or in raw mode the next chunk of bytes.
// isFrame is false for raw chunks.
func (f *framer) next() (b []byte, isFrame bool, err error) {
	if f.raw {
		buf := make([]byte, rawChunk)
		n, err := f.r.Read(buf)
		if n > 0 {
			return buf[:n], false, nil
		}
		return nil, false, err
	}
	var hdr [4]byte
	if _, err := io.ReadFull(f.r, hdr[:]); err != nil {
		return nil, false, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		f.raw = true
		return hdr[:], false, nil
	}
	b = make([]byte, 4+int(n))
	copy(b, hdr[:])
	if _, err := io.ReadFull(f.r, b[4:]); err != nil {
		return nil, false, err
	}
	return b, true, nil
}

// requestHeader reads xid and opcode from a client frame after the connect
// request.
func requestHeader(frame []byte) (xid, op int32, ok bool) {
	if len(frame) < 12 {
		return 0, 0, false
	}
	return int32(binary.BigEndian.Uint32(frame[4:8])), int32(binary.BigEndian.Uint32(frame[8:12])), true
}

// replyXid reads the xid of a server frame after the connect response
// (xid int32, zxid int64, err int32, body).
func replyXid(frame []byte) (xid int32, ok bool) {
	if len(frame) < 20 {
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(frame[4:8])), true
}
