package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/nats-io/nats.go"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// demoZK finds the ZooKeeper the demo uses: the one at --zk when it
// answers, else one started from the installed package. It returns the
// servers, the session timeout the runners should ask for, and a func that
// stops a ZooKeeper the demo started.
func (a *app) demoZK(ctx context.Context, dir string, want time.Duration) ([]string, time.Duration, func(), error) {
	servers, err := a.servers()
	if err != nil {
		return nil, 0, nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	s, err := elect.NewSession(pctx, servers, elect.WithSessionTimeout(want), elect.AcceptNegotiatedTimeout(),
		elect.WithConnectTimeout(2*time.Second))
	cancel()
	if err == nil {
		granted := s.Timeout()
		s.Close()
		fmt.Fprintf(a.stdout, "demo: using the ZooKeeper at %s (session timeout %v)\n", strings.Join(servers, ","), granted)
		return servers, granted, func() {}, nil
	}
	fmt.Fprintf(a.stdout, "demo: no ZooKeeper at %s; starting one\n", strings.Join(servers, ","))
	c, err := zkserver.Start(ctx, zkserver.Config{Dir: filepath.Join(dir, "zk")})
	if err != nil {
		if zkserver.IsNotInstalled(err) {
			return nil, 0, nil, fmt.Errorf("%w (or point --zk at a running ZooKeeper; 'make demo' installs it)", err)
		}
		return nil, 0, nil, err
	}
	fmt.Fprintf(a.stdout, "demo: ZooKeeper started at %s\n", c.ConnectString())
	return c.Addrs(), want, func() { _ = c.Close() }, nil
}

// ensurePath creates p and its parents (plain persistent nodes).
func ensurePath(ctx context.Context, s *elect.Session, p string) error {
	cur := ""
	for _, seg := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		cur += "/" + seg
		_, err := s.Conn().Create(cur, nil, 0, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", cur, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// demoNATS starts the embedded NATS server with JetStream.
func demoNATS(ctx context.Context, dir string) (url string, stop func(), err error) {
	srv, err := natsserver.Run(ctx, natsserver.Config{StoreDir: filepath.Join(dir, "nats"), Name: "herald-demo"})
	if err != nil {
		return "", nil, err
	}
	// Stopped and waited for: its store is in the demo's temp dir, which
	// is removed next.
	return srv.ClientURL(), func() { srv.Shutdown(); srv.WaitForShutdown() }, nil
}

// demoBridge builds an in-process bridge from the demo group to JetStream
// and an audit log. The JetStream sink publishes on the herald.> subjects,
// so core subscribers see every event too; a separate core sink would make
// the stream store each event twice (core publishes carry no msg-id).
func demoBridge(servers []string, group, natsURL, auditPath string) (*bridge.Bridge, error) {
	opts := natssink.Options{URL: natsURL, Name: "herald-demo-bridge"}
	js, err := jetstream.New(jetstream.Config{Conn: opts})
	if err != nil {
		return nil, err
	}
	as, err := audit.New(auditPath)
	if err != nil {
		return nil, err
	}
	return bridge.New(bridge.Config{
		Servers:        servers,
		SessionTimeout: 4 * time.Second,
		Watch:          []string{group},
		Sinks:          []publish.Sink{js, as},
		Lossless:       []string{as.Name()},
		Source:         "herald-demo-bridge/" + path.Base(group), // one per demo: two demos on one ensemble claim their own
		DrainTimeout:   5 * time.Second,
		HTTPAddr:       "127.0.0.1:0", // the live page
	})
}

// demoEvents subscribes to every herald subject and prints each event as it
// arrives; events are also passed on seen for the demo's own waits.
type demoEvents struct {
	nc   *nats.Conn
	sub  *nats.Subscription
	seen chan publish.Event
}

func (a *app) subscribeEvents(url string, print func(string)) (*demoEvents, error) {
	nc, err := nats.Connect(url, nats.Name("herald-demo-tail"))
	if err != nil {
		return nil, fmt.Errorf("connect to the demo's NATS: %w", err)
	}
	d := &demoEvents{nc: nc, seen: make(chan publish.Event, 1024)}
	// A consumer drops duplicates by id (a bridge may publish a change
	// again after a restart or takeover): print each id once.
	printed := map[string]bool{}
	d.sub, err = nc.Subscribe("herald.>", func(m *nats.Msg) {
		e, err := natssink.Decode(m)
		if err != nil || printed[e.ID] {
			return
		}
		printed[e.ID] = true
		print("  event  " + eventLine(e))
		select {
		case d.seen <- e:
		default: // the demo only waits on a few events; printing is what matters
		}
	})
	if err != nil {
		nc.Close()
		return nil, err
	}
	return d, nil
}

// close waits for what the server already routed to us, then disconnects.
func (d *demoEvents) close() {
	_ = d.nc.Flush()
	_ = d.sub.Drain()
	deadline := time.Now().Add(2 * time.Second)
	for d.sub.IsValid() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	d.nc.Close()
}

// demoOut serialises the lines of the demo, its runners and their jobs.
type demoOut struct {
	mu      sync.Mutex
	w       io.Writer
	resumed []string // lines in which a job reports the checkpoint it resumed from
	// closed is called when a write fails: nobody reads the demo now.
	closed func()
}

func (o *demoOut) line(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, err := fmt.Fprintln(o.w, s); err != nil && o.closed != nil {
		o.closed()
	}
}

// pipe returns a writer whose lines are printed with prefix. The returned
// func waits until everything written was printed.
func (o *demoOut) pipe(prefix string) (io.WriteCloser, func()) {
	r, w := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			t := sc.Text()
			if strings.Contains(t, "resuming from checkpoint") {
				o.mu.Lock()
				o.resumed = append(o.resumed, t)
				o.mu.Unlock()
			}
			o.line(prefix + t)
		}
		_, _ = io.Copy(io.Discard, r)
	}()
	return w, func() { <-done }
}
