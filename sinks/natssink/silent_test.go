package natssink_test

import (
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
