package faultproxy_test

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// frame is a ZooKeeper-framed packet carrying n.
func frame(n uint32) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint32(b, 4)
	binary.BigEndian.PutUint32(b[4:], n)
	return b
}

// TestDelayKeepsOrderAndLateness: frames sent at once through a delayed
// proxy arrive in order, each no sooner than the delay after it was sent
// and together (not one delay after another), and a close sent after them
// arrives after them.
func TestDelayKeepsOrderAndLateness(t *testing.T) {
	const d, frames = 60 * time.Millisecond, 200
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type got struct {
		n   []uint32
		at  []time.Time
		eof bool
		err error
	}
	res := make(chan got, 1)
	go func() {
		var g got
		defer func() { res <- g }()
		c, err := ln.Accept()
		if err != nil {
			g.err = err
			return
		}
		defer c.Close()
		for {
			b := make([]byte, 8)
			if _, err := io.ReadFull(c, b); err != nil {
				g.eof, g.err = err == io.EOF, err
				return
			}
			g.n, g.at = append(g.n, binary.BigEndian.Uint32(b[4:])), append(g.at, time.Now())
		}
	}()
	p := newProxy(t, ln.Addr().String())
	p.Delay(d)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	for i := range frames {
		if _, err := c.Write(frame(uint32(i))); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	var g got
	select {
	case g = <-res:
	case <-time.After(10 * time.Second):
		t.Fatal("the target did not see the client close within 10s")
	}
	if !g.eof {
		t.Fatalf("the target's read ended with %v, want EOF after every frame", g.err)
	}
	if len(g.n) != frames {
		t.Fatalf("the target got %d frames before the close, want %d", len(g.n), frames)
	}
	for i, n := range g.n {
		if n != uint32(i) {
			t.Fatalf("frame %d carried %d: out of order", i, n)
		}
	}
	if first := g.at[0].Sub(sent); first < d {
		t.Errorf("the first frame arrived %v after it was sent, want at least the delay %v", first, d)
	}
	// Delayed one after another, the last would come frames*d after the
	// first; delayed each from its own sending, within a few delays.
	if spread := g.at[frames-1].Sub(g.at[0]); spread > 5*d {
		t.Errorf("the frames' arrivals spread over %v: each waited behind the one before", spread)
	}
}

// TestDelayLengthensRoundTrips: a ZooKeeper request through a delayed
// proxy takes at least two delays, requests in flight together share them,
// and connections accepted before the delay keep none.
func TestDelayLengthensRoundTrips(t *testing.T) {
	const d = 40 * time.Millisecond
	srv := zktest.Shared(t)
	p := newProxy(t, srv.Member(0).Addr())
	before := dial(t, p.Addr(), 10*time.Second)
	before.await(t, zk.StateHasSession, 10*time.Second)
	p.Delay(d)
	c := dial(t, p.Addr(), 10*time.Second)
	c.await(t, zk.StateHasSession, 10*time.Second)
	path := uniq(t)
	if _, err := c.Create(path, []byte("x"), 0, acl); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, _, err := c.Get(path); err != nil {
		t.Fatal(err)
	}
	if rtt := time.Since(start); rtt < 2*d {
		t.Errorf("a getData through the delayed proxy took %v, want at least %v", rtt, 2*d)
	}
	const together = 20
	start = time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, together)
	for range together {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := c.Get(path)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took > together*d/2 {
		t.Errorf("%d getData in flight together took %v: they waited one behind another", together, took)
	}
	fast := time.Duration(1 << 62)
	for range 5 {
		start = time.Now()
		if _, _, err := before.Get(path); err != nil {
			t.Fatal(err)
		}
		fast = min(fast, time.Since(start))
	}
	if fast >= d {
		t.Errorf("a connection accepted before Delay took %v for a getData: it took the delay too", fast)
	}
}
