package zkserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Cluster is a standalone ZooKeeper server or an ensemble, started by Start
// and stopped by Close.
type Cluster struct {
	cfg     Config
	dir     string
	ownDir  bool
	servers []*Server
	relays  []*relay // Config.Isolatable's (see Isolate)

	mu     sync.Mutex
	closed bool
}

// Start launches cfg.Nodes servers on free loopback ports and waits until
// every one serves clients and, for an ensemble, one of them leads. It is
// bounded by ctx and by cfg.StartTimeout. When Java or ZooKeeper is not
// installed it returns ErrJavaNotFound or ErrZooKeeperNotFound (see
// IsNotInstalled); when a server fails, the error ends with its log.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	rt, err := FindRuntime()
	if err != nil {
		return nil, err
	}
	// The ports are free when picked, not when the servers bind them:
	// another process (a test beside this one) may take one in between.
	// A server that dies of that is started again on new ports.
	for attempt := 1; ; attempt++ {
		c, err := start(ctx, cfg, rt)
		if err == nil || attempt == 3 || !portTaken(err) {
			return c, err
		}
	}
}

// portTaken reports whether a start failed because a server could not
// bind a port it was given (ZooKeeper's exit status 14 is a quorum port
// it could not bind).
func portTaken(err error) bool {
	msg := err.Error()
	return errors.Is(err, ErrExited) && (strings.Contains(msg, "Address already in use") || strings.Contains(msg, "exit status 14"))
}

// start is one try of Start.
func start(ctx context.Context, cfg Config, rt Runtime) (*Cluster, error) {
	var err error
	c := &Cluster{cfg: cfg, dir: cfg.Dir}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "herald-zk-"); err != nil {
			return nil, fmt.Errorf("zkserver: temp dir: %w", err)
		}
		c.ownDir = true
	}
	if err := c.prepare(rt); err != nil {
		c.Close()
		return nil, err
	}
	ctx, cancel := withStartTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	if err := c.launch(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// prepare allocates ports and writes each member's directory and config.
func (c *Cluster) prepare(rt Runtime) error {
	n := c.cfg.Nodes
	perNode := 3
	if n == 1 {
		perNode = 1 // a standalone server has no quorum or election port
	}
	free, err := freePorts(n*perNode + n)
	if err != nil {
		return err
	}
	members := make([]ports, n)
	for i := range members {
		members[i].client = free[i*perNode]
		if perNode == 3 {
			members[i].quorum, members[i].election = free[i*3+1], free[i*3+2]
		}
		members[i].secure = free[n*perNode+i] // used only with TLSKeyStore
	}
	var sink *syncWriter
	if c.cfg.LogWriter != nil {
		sink = &syncWriter{w: c.cfg.LogWriter}
	}
	views := make([][]ports, n)
	for i := range views {
		views[i] = members
	}
	if c.cfg.Isolatable && n > 1 {
		if views, err = c.relayedPeers(members); err != nil {
			return err
		}
	}
	for i := range members {
		id := i + 1
		s := &Server{id: id, dir: filepath.Join(c.dir, "zk"+strconv.Itoa(id)), ports: members[i], rt: rt, cfg: c.cfg, cluster: c}
		if sink != nil {
			s.logSink = sink
		}
		dataDir := filepath.Join(s.dir, "data")
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return fmt.Errorf("zkserver: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dataDir, "myid"), []byte(strconv.Itoa(id)+"\n"), 0o644); err != nil {
			return fmt.Errorf("zkserver: %w", err)
		}
		if err := os.WriteFile(s.cfgPath(), []byte(c.cfg.zooCfg(id, dataDir, views[i])), 0o644); err != nil {
			return fmt.Errorf("zkserver: %w", err)
		}
		c.servers = append(c.servers, s)
	}
	return nil
}

func (c *Cluster) launch(ctx context.Context) error {
	for _, s := range c.servers {
		if err := s.launch(); err != nil {
			return err
		}
	}
	for _, s := range c.servers {
		if err := s.waitServing(ctx); err != nil {
			return err
		}
	}
	_, err := c.Leader(ctx)
	return err
}

// freePorts asks the kernel for n distinct free loopback ports, holding
// them all open at once so none repeats.
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	out := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("zkserver: free port: %w", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// Close kills every server and removes the directory Start created (a
// Config.Dir given by the caller is kept). Calling it again does nothing.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	var errs []error
	for _, s := range c.servers {
		errs = append(errs, s.Kill())
	}
	for _, r := range c.relays {
		r.close()
	}
	if c.ownDir {
		errs = append(errs, os.RemoveAll(c.dir))
	}
	return errors.Join(errs...)
}

func (c *Cluster) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Dir is the directory holding every member's zkN/ directory.
func (c *Cluster) Dir() string { return c.dir }

// Len is the number of members.
func (c *Cluster) Len() int { return len(c.servers) }

// Member returns member i, counted from 0 (its ZooKeeper id is i+1). It
// panics when i is out of range, like a slice index.
func (c *Cluster) Member(i int) *Server { return c.servers[i] }

// Members returns every member, in id order.
func (c *Cluster) Members() []*Server { return append([]*Server(nil), c.servers...) }

// Addrs returns every member's client address, "127.0.0.1:port".
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.Addr()
	}
	return out
}

// SecureAddrs lists every member's TLS client address (Config.TLSKeyStore),
// ordered by id; nil without TLS.
func (c *Cluster) SecureAddrs() []string {
	if c.cfg.TLSKeyStore == "" {
		return nil
	}
	out := make([]string, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.SecureAddr()
	}
	return out
}

// ConnectString is the comma-separated client address list.
func (c *Cluster) ConnectString() string { return strings.Join(c.Addrs(), ",") }

// Leader waits until a running, unpaused member reports zk_server_state
// leader (or standalone) in mntr and returns it. After the leader is
// killed, it returns the newly elected one. Bounded by ctx and
// Config.StartTimeout.
func (c *Cluster) Leader(ctx context.Context) (*Server, error) {
	ctx, cancel := withStartTimeout(ctx, c.cfg.StartTimeout)
	defer cancel()
	var states []string
	for {
		if c.isClosed() {
			return nil, ErrClosed
		}
		states = states[:0]
		for _, s := range c.servers {
			if !s.Running() || s.Paused() {
				states = append(states, fmt.Sprintf("zk%d down", s.id))
				continue
			}
			qctx, qcancel := context.WithTimeout(ctx, time.Second)
			st, err := s.State(qctx)
			qcancel()
			if err != nil {
				states = append(states, fmt.Sprintf("zk%d: %v", s.id, err))
				continue
			}
			if st == "leader" || st == "standalone" {
				return s, nil
			}
			states = append(states, fmt.Sprintf("zk%d %s", s.id, st))
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("zkserver: no leader (%w): %s", ctx.Err(), strings.Join(states, "; "))
		case <-time.After(pollInterval):
		}
	}
}
