//go:build !windows

package bridge_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// streamGoroutines counts the goroutines serving a live page's event
// stream, and those of them blocked writing.
func streamGoroutines() (all, writing int) {
	buf := make([]byte, 16<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "bridge.(*Bridge).serveEvents") {
			all++
			if strings.Contains(g, "poll.(*FD).Write") {
				writing++
			}
		}
	}
	return all, writing
}

// stuckStream starts a bridge whose live page's event stream has a reader
// that stopped reading (a frozen browser, a peer gone behind a NAT with
// no reset), and returns it once the stream is blocked writing to it.
func stuckStream(t *testing.T) *running {
	t.Helper()
	addrs := zkAddrs(t)
	root := groupPath(t)
	// Long paths, so that the rows of a stream's first batch overfill the
	// sockets' buffers.
	long := root + "/" + strings.Repeat("x", 60000)
	s := session(t, addrs)
	conn := s.Conn()
	for _, p := range []string{path.Dir(root), root, long} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	const n = 120
	for i := range n {
		if _, err := conn.Create(fmt.Sprintf("%s/g-%03d", long, i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{long}, HTTPAddr: "127.0.0.1:0", Source: "stream-stuck", Sinks: []publish.Sink{auditSink(t)}})
	waitStatus(t, r.Bridge, 60*time.Second, "every group observed", func(st bridge.Status) bool { return len(st.NotReady()) == 0 && len(st.Groups) == n })

	resp, err := http.Get("http://" + r.HTTPAddr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	page := bufio.NewScanner(resp.Body)
	page.Buffer(nil, 1<<24)
	cursor := ""
	for page.Scan() {
		if _, after, ok := strings.Cut(page.Text(), `data-cursor="`); ok {
			cursor, _, _ = strings.Cut(after, `"`)
		}
	}
	_ = resp.Body.Close()
	if cursor == "" {
		t.Fatal("no cursor on the page")
	}
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	reader, err := d.Dial("tcp", r.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reader.Close() })
	fmt.Fprintf(reader, "GET /events?since=%s HTTP/1.1\r\nHost: x\r\n\r\n", cursor)
	// Every group gets an owner: rows the reader never reads.
	for i := range n {
		if _, err := conn.Create(fmt.Sprintf("%s/g-%03d/n_", long, i), nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "the stream blocked writing to its reader", func() bool { _, w := streamGoroutines(); return w == 1 })
	return r
}

// TestEventStreamOfAStuckReaderEndsWithTheBridge: the bridge's stop ends
// a stream blocked writing to a reader that stopped reading. Before, its
// cancel went unseen: the stream, its connection and the bridge it holds
// outlived Run.
func TestEventStreamOfAStuckReaderEndsWithTheBridge(t *testing.T) {
	r := stuckStream(t)
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the stuck stream ended with the bridge", func() bool { all, _ := streamGoroutines(); return all == 0 })
}

// TestEventStreamDropsAReaderThatStoppedReading: a running bridge drops a
// page's stream whose reader takes nothing for 20 s (a browser that comes
// back reconnects by itself). Before, the stream stayed blocked, its
// goroutine and connection held, for as long as the bridge ran.
func TestEventStreamDropsAReaderThatStoppedReading(t *testing.T) {
	r := stuckStream(t)
	waitFor(t, 40*time.Second, "the stuck stream dropped", func() bool { all, _ := streamGoroutines(); return all == 0 })
	resp, err := http.Get("http://" + r.HTTPAddr() + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the bridge after dropping the stream: /readyz %v, %v", resp, err)
	}
	_ = resp.Body.Close()
}
