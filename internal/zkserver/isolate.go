package zkserver

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
)

// A member cut off from the rest of an ensemble while its clients still
// reach it: with Config.Isolatable, every member reaches each other
// member's quorum and election ports through a relay of the cluster's
// own, and Isolate stops the relays to and from one member. Nothing is
// closed: bytes are held, as a network that drops packets holds them, so
// the member notices the silence only when ZooKeeper's own timeouts say
// (syncLimit ticks for a follower), and its client port goes on serving
// meanwhile.

// relay forwards connections from its listener to target while it is not
// held; held, it moves no byte in either direction and accepts nothing.
type relay struct {
	ln     net.Listener
	target string
	from   int // the member whose config names this relay (index)
	to     int // the member it reaches (index)

	mu     sync.Mutex
	held   bool
	thawed chan struct{} // closed when held ends
	conns  map[net.Conn]bool
	closed bool
}

func newRelay(target string, from, to int) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("zkserver: relay: %w", err)
	}
	r := &relay{ln: ln, target: target, from: from, to: to, thawed: make(chan struct{}), conns: map[net.Conn]bool{}}
	close(r.thawed)
	go r.accept()
	return r, nil
}

func (r *relay) port() int { return r.ln.Addr().(*net.TCPAddr).Port }

// wait blocks while the relay is held; false once it is closed.
func (r *relay) wait() bool {
	r.mu.Lock()
	ch, closed := r.thawed, r.closed
	r.mu.Unlock()
	if closed {
		return false
	}
	<-ch
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.closed
}

func (r *relay) hold(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if on == r.held {
		return
	}
	r.held = on
	if on {
		r.thawed = make(chan struct{})
	} else {
		close(r.thawed)
	}
}

func (r *relay) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		go r.serve(c)
	}
}

func (r *relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		c.Close()
		return false
	}
	r.conns[c] = true
	return true
}

func (r *relay) serve(in net.Conn) {
	if !r.track(in) || !r.wait() {
		in.Close()
		return
	}
	out, err := net.Dial("tcp", r.target)
	if err != nil || !r.track(out) {
		in.Close()
		return
	}
	go r.pipe(out, in)
	r.pipe(in, out)
}

// pipe copies src to dst, holding whatever it read while the relay is
// held; either side closing closes both.
func (r *relay) pipe(src, dst net.Conn) {
	defer src.Close()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		if !r.wait() {
			return
		}
		n, err := src.Read(buf)
		if n > 0 {
			if !r.wait() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // end of file or an error: either ends the connection
		}
	}
}

func (r *relay) close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	if r.held {
		close(r.thawed)
	}
	conns := r.conns
	r.conns = nil
	r.mu.Unlock()
	r.ln.Close()
	for c := range conns {
		c.Close()
	}
}

// relayedPeers makes, for an Isolatable ensemble, each member's view of
// the others' quorum and election ports: relays of the cluster's own. The
// view of member i (index) holds its own ports as they are.
func (c *Cluster) relayedPeers(members []ports) ([][]ports, error) {
	views := make([][]ports, len(members))
	for i := range members {
		views[i] = append([]ports(nil), members...)
		for j := range members {
			if j == i {
				continue
			}
			q, err := newRelay("127.0.0.1:"+strconv.Itoa(members[j].quorum), i, j)
			if err != nil {
				return nil, err
			}
			c.relays = append(c.relays, q)
			e, err := newRelay("127.0.0.1:"+strconv.Itoa(members[j].election), i, j)
			if err != nil {
				return nil, err
			}
			c.relays = append(c.relays, e)
			views[i][j].quorum, views[i][j].election = q.port(), e.port()
		}
	}
	return views, nil
}

// Isolate cuts member i (index, as Member takes) off from the rest of the
// ensemble, or, with on false, ends that: no byte moves between it and
// any other member meanwhile, while its clients still reach it. The
// cluster must have been started with Config.Isolatable.
func (c *Cluster) Isolate(i int, on bool) error {
	if len(c.relays) == 0 {
		return fmt.Errorf("%w: Isolate needs an ensemble started with Isolatable", ErrInvalidConfig)
	}
	if i < 0 || i >= len(c.servers) {
		return fmt.Errorf("%w: no member %d", ErrInvalidConfig, i)
	}
	for _, r := range c.relays {
		if r.from == i || r.to == i {
			r.hold(on)
		}
	}
	return nil
}

// Followers waits for the ensemble's leader (see Leader) and returns the
// indexes (as Member takes) of the other members, in order.
func (c *Cluster) Followers(ctx context.Context) ([]int, error) {
	leader, err := c.Leader(ctx)
	if err != nil {
		return nil, err
	}
	var out []int
	for i, m := range c.servers {
		if m != leader {
			out = append(out, i)
		}
	}
	return out, nil
}
