package elect

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// dialer wraps net.DialTimeout for two reasons: it reads the session timeout
// the server granted from the handshake (the client does not expose it), and
// it refuses to dial once the session is lost, so the client cannot quietly
// open a new session in its place.
func (s *Session) dialer(timeout time.Duration) zk.Dialer {
	return func(network, address string, _ time.Duration) (net.Conn, error) {
		if s.lostFlag.Load() {
			return nil, errors.New("elect: session lost; not reconnecting")
		}
		c, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &sniffConn{Conn: c, s: s, r: bufio.NewReaderSize(c, 16<<10)}, nil
	}
}

// sniffConn reads the first 12 bytes the server sends: the frame length,
// the protocol version and the negotiated timeout of the connect response.
type sniffConn struct {
	net.Conn
	r    *bufio.Reader
	s    *Session
	once sync.Once
	buf  []byte
	done bool
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if !c.done && n > 0 {
		need := 12 - len(c.buf)
		c.buf = append(c.buf, p[:min(n, need)]...)
		if len(c.buf) >= 12 {
			c.done = true
			if to := int32(binary.BigEndian.Uint32(c.buf[8:12])); to > 0 {
				c.s.granted.Store(int64(to))
			}
		}
	}
	return n, err
}
