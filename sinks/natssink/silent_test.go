package natssink_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/sinks/natssink"
)

// TestSilentServerNoticed: a server that stops answering without closing
// the connection (frozen, a cut without a reset) is noticed within about
// fifteen seconds, so that writes and reads go on from another server,
// rather than after the four minutes of the client's default pings.
func TestSilentServerNoticed(t *testing.T) {
	srv := natsserver.Start(t)
	p, err := faultproxy.New(srv.URL()[len("nats://"):])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	s := connected(t, natssink.Options{URL: "nats://" + p.Addr()})
	p.Blackhole(true)
	t.Cleanup(func() { p.Blackhole(false) })
	start := time.Now()
	for s.Connected() {
		if time.Since(start) > 25*time.Second {
			t.Fatal("a silent server not noticed within 25 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("noticed after %v", time.Since(start).Round(100*time.Millisecond))
}

// TestSilentServerInTheListCostsItsShare: a server early in the URL list
// that accepts and then says nothing (frozen) holds a connect up for its
// share of the timeout, not all of it, so a reader with a healthy server
// further on gets through.
func TestSilentServerInTheListCostsItsShare(t *testing.T) {
	srv := natsserver.Start(t)
	silent := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				t.Cleanup(func() { _ = c.Close() }) // held open, never a word
			}
		}()
		return "nats://" + ln.Addr().String()
	}
	s1, s2 := silent(), silent()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	start := time.Now()
	_, err := natssink.Options{URL: s1 + "," + s2, Timeout: 4 * time.Second}.Dial(ctx)
	if d := time.Since(start); err == nil || d > 6*time.Second {
		t.Fatalf("two silent servers, Timeout 4s: %v after %v; want a failure after about 4s (2s each), not 8s", err, d)
	}
	start = time.Now()
	nc, err := natssink.Options{URL: s1 + "," + s2 + "," + srv.URL(), Timeout: 6 * time.Second}.Dial(ctx)
	if err != nil {
		t.Fatalf("two silent servers and a healthy one: %v", err)
	}
	nc.Close()
	if d := time.Since(start); d > 6*time.Second {
		t.Fatalf("two silent servers and a healthy one, Timeout 6s: connected after %v; want within about 4s (2s per silent server)", d)
	}
}
