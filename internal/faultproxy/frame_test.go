package faultproxy

import (
	"bytes"
	"encoding/binary"
	"io"
	"slices"
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

// A set-watches request keeps its header and relative zxid, and each of
// its path lists comes out in the order the test's function gives; a
// frame that does not parse as one goes on as it came.
func TestReorderSetWatches(t *testing.T) {
	build := func(lists ...[]string) []byte {
		b := make([]byte, 20)
		binary.BigEndian.PutUint32(b[4:], 7)
		binary.BigEndian.PutUint32(b[8:], uint32(OpSetWatches))
		binary.BigEndian.PutUint64(b[12:], 42)
		for _, l := range lists {
			b = binary.BigEndian.AppendUint32(b, uint32(len(l)))
			for _, s := range l {
				b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
				b = append(b, s...)
			}
		}
		binary.BigEndian.PutUint32(b, uint32(len(b)-4))
		return b
	}
	reverse := func(paths []string) { slices.Reverse(paths) }
	got := reorderSetWatches(build([]string{"/a", "/bb", "/ccc"}, nil, []string{"/x", "/y"}), reverse)
	want := build([]string{"/ccc", "/bb", "/a"}, nil, []string{"/y", "/x"})
	if !bytes.Equal(got, want) {
		t.Fatalf("reordered:\n%x\nwant\n%x", got, want)
	}
	bad := build([]string{"/a"})
	bad = bad[:len(bad)-1] // a path cut short
	if got := reorderSetWatches(bad, reverse); !bytes.Equal(got, bad) {
		t.Fatalf("a frame that does not parse was changed: %x", got)
	}
}
