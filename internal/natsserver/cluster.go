package natsserver

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ClusterReadyTimeout is how long StartCluster and Cluster.Restart wait for
// JetStream to elect its meta leader and for every running node to catch up.
const ClusterReadyTimeout = 30 * time.Second

// Cluster is N embedded nats-servers with JetStream, routed to each other
// as one NATS cluster, started for a test. Each node has its own client
// port, cluster port and store directory; Stop and Restart take one node
// away and bring it back on the same ports and store, the way an operator
// restarts one server of a real cluster.
type Cluster struct {
	name  string
	nodes []*Server
}

// StartCluster starts an n-node cluster (n >= 1) on 127.0.0.1 and returns
// once JetStream has a meta leader and every node is current with it.
// opts apply to every node. The cluster is shut down when the test ends.
func StartCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("natsserver: a cluster needs at least one node, not %d", n)
	}
	var lastErr error
	// The cluster ports are picked before any node starts, so that every
	// node can name all its peers; another process may take one in
	// between, and then the whole cluster starts again on new ports.
	for attempt := 0; attempt < 3; attempt++ {
		c, err := startCluster(t, n, opts)
		if err == nil {
			t.Cleanup(c.Shutdown)
			if err := c.waitReady(); err != nil {
				t.Fatalf("natsserver: %v", err)
			}
			return c
		}
		lastErr = err
	}
	t.Fatalf("natsserver: start a %d-node cluster: %v", n, lastErr)
	return nil
}

func startCluster(t testing.TB, n int, opts []Option) (*Cluster, error) {
	ports, err := freePorts(n)
	if err != nil {
		return nil, err
	}
	routes := make([]*url.URL, n)
	for i, p := range ports {
		routes[i] = &url.URL{Scheme: "nats-route", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(p))}
	}
	c := &Cluster{name: fmt.Sprintf("herald-test-%d", time.Now().UnixNano())}
	for i := range n {
		o := Config{StoreDir: t.TempDir(), Name: fmt.Sprintf("n%d", i)}.options()
		o.Cluster = server.ClusterOpts{Name: c.name, Host: "127.0.0.1", Port: ports[i]}
		for j, r := range routes {
			if j != i {
				o.Routes = append(o.Routes, r)
			}
		}
		for _, opt := range opts {
			if err := opt(o); err != nil {
				c.Shutdown()
				t.Fatalf("natsserver: %v", err)
			}
		}
		srv, err := start(o, !o.NoLog)
		if err != nil {
			c.Shutdown()
			return nil, fmt.Errorf("node %d: %w", i, err)
		}
		addr, ok := srv.Addr().(*net.TCPAddr)
		if !ok {
			srv.Shutdown()
			c.Shutdown()
			return nil, fmt.Errorf("node %d listens on %v, not TCP", i, srv.Addr())
		}
		o.Port = addr.Port // keep the client port for Restart
		c.nodes = append(c.nodes, &Server{srv: srv, opts: o, url: "nats://" + net.JoinHostPort(o.Host, strconv.Itoa(addr.Port))})
	}
	return c, nil
}

// freePorts returns n ports on 127.0.0.1 that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free cluster port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Size is the number of nodes, running or not.
func (c *Cluster) Size() int { return len(c.nodes) }

// Name is the NATS cluster name the nodes share.
func (c *Cluster) Name() string { return c.name }

// URLs are the nodes' client URLs, in node order.
func (c *Cluster) URLs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.URL()
	}
	return out
}

// URL is every node's client URL, comma separated, as herald's --nats and
// nats.Connect take them.
func (c *Cluster) URL() string { return strings.Join(c.URLs(), ",") }

// Node returns node i.
func (c *Cluster) Node(i int) *Server { return c.nodes[i] }

// Stop shuts node i down and waits until it is gone. Its store stays, for
// Restart.
func (c *Cluster) Stop(i int) { c.nodes[i].Shutdown() }

// Restart starts node i again (stopping it first if it runs) on the same
// ports and store, and returns once it is current with the JetStream meta
// leader again.
func (c *Cluster) Restart(t testing.TB, i int) {
	t.Helper()
	c.nodes[i].Restart(t)
	if err := c.waitReady(); err != nil {
		t.Fatalf("natsserver: after restarting node %d: %v", i, err)
	}
}

// Shutdown stops every node.
func (c *Cluster) Shutdown() {
	for _, n := range c.nodes {
		n.Shutdown()
	}
}

// StreamLeader is the index of the node leading stream in the global
// account (the one clients without credentials use), or -1 while no running
// node leads it.
func (c *Cluster) StreamLeader(stream string) int {
	for i, n := range c.nodes {
		if s := n.NATS(); s != nil && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			return i
		}
	}
	return -1
}

// LocalStream is node i's own copy of stream in the global account: its
// state as that node stores it, whether or not it leads the stream. ok is
// false while the node is stopped or holds no such stream.
func (c *Cluster) LocalStream(i int, stream string) (state server.StreamState, ok bool) {
	s := c.nodes[i].NATS()
	if s == nil {
		return state, false
	}
	jsz, err := s.Jsz(&server.JSzOptions{Account: server.DEFAULT_GLOBAL_ACCOUNT, Streams: true})
	if err != nil {
		return state, false
	}
	for _, a := range jsz.AccountDetails {
		for _, sd := range a.Streams {
			if sd.Name == stream {
				return sd.State, true
			}
		}
	}
	return state, false
}

// MetaLeader is the index of the node leading JetStream's meta group, or
// -1 while there is none.
func (c *Cluster) MetaLeader() int {
	for i, n := range c.nodes {
		if s := n.NATS(); s != nil && s.JetStreamIsLeader() {
			return i
		}
	}
	return -1
}

// waitReady waits until JetStream has a meta leader that knows every node,
// and every running node is current with it.
func (c *Cluster) waitReady() error {
	deadline := time.Now().Add(ClusterReadyTimeout)
	for {
		why := c.notReady()
		if why == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: JetStream cluster %s not ready after %s: %s", ErrNotReady, c.name, ClusterReadyTimeout, why)
		}
		time.Sleep(25 * time.Millisecond) // polling a condition, not ordering
	}
}

// notReady says why the cluster is not ready yet ("" when it is).
func (c *Cluster) notReady() string {
	leader := c.MetaLeader()
	if leader < 0 {
		return "no meta leader elected"
	}
	ls := c.nodes[leader].NATS()
	if ls == nil {
		return "the meta leader stopped"
	}
	if peers := ls.JetStreamClusterPeers(); len(peers) < len(c.nodes) {
		return fmt.Sprintf("the meta leader knows %d of %d nodes", len(peers), len(c.nodes))
	}
	for i, n := range c.nodes {
		s := n.NATS()
		if s == nil {
			continue
		}
		if !s.JetStreamIsCurrent() {
			return fmt.Sprintf("node %d is not current with the meta leader", i)
		}
	}
	return ""
}
