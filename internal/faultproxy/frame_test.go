package faultproxy

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
)

func frame(words ...int32) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, int32(4*len(words)))
	for _, w := range words {
		binary.Write(&b, binary.BigEndian, w)
	}
	return b.Bytes()
}

func TestFramerSplitsFrames(t *testing.T) {
	req := frame(7, OpCreate, 42)
	var stream bytes.Buffer
	stream.Write(frame(0, 0, 0)) // connect request: no header
	stream.Write(req)
	f := framer{r: &stream}

	if b, ok, err := f.next(); err != nil || !ok || len(b) != 16 {
		t.Fatalf("connect frame = %d bytes, frame %v, %v", len(b), ok, err)
	}
	b, ok, err := f.next()
	if err != nil || !ok || !bytes.Equal(b, req) {
		t.Fatalf("request frame = %x, %v, %v; want %x", b, ok, err, req)
	}
	if xid, op, ok := requestHeader(b); !ok || xid != 7 || op != OpCreate {
		t.Fatalf("requestHeader = %d, %d, %v", xid, op, ok)
	}
	if _, _, err := f.next(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

func TestFramerFallsBackToRaw(t *testing.T) {
	f := framer{r: bytes.NewReader([]byte("ruok"))}
	b, ok, err := f.next()
	if err != nil || ok || string(b) != "ruok" || !f.raw {
		t.Fatalf("four-letter bytes: %q, frame %v, raw %v, %v", b, ok, f.raw, err)
	}
}

func TestReplyXid(t *testing.T) {
	reply := frame(9, 0, 1, 0) // xid, zxid (two words), err
	if xid, ok := replyXid(reply); !ok || xid != 9 {
		t.Fatalf("replyXid = %d, %v; want 9", xid, ok)
	}
	if _, ok := replyXid(frame(9)); ok {
		t.Fatal("replyXid accepted a frame shorter than a reply header")
	}
}
