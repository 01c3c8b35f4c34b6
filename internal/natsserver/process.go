package natsserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ProcessCluster is N nats-server processes with JetStream, routed as one
// cluster: unlike Cluster's embedded servers, a node can be killed with
// SIGKILL, as a crash or the OOM killer would, with no chance to hand over
// what it leads. The binary is built from the nats-server module herald
// already depends on, once per test binary.
type ProcessCluster struct {
	name  string
	bin   string
	nodes []*procNode
}

type procNode struct {
	name        string
	port, route int
	store       string
	args        []string
	cmd         *exec.Cmd
	exited      chan struct{}
	log         *os.File
}

var buildOnce struct {
	sync.Once
	bin string
	err error
}

// serverBinary builds nats-server into a directory that lives as long as
// the test binary.
func serverBinary() (string, error) {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "herald-nats-server-")
		if err != nil {
			buildOnce.err = err
			return
		}
		bin := filepath.Join(dir, "nats-server")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2").CombinedOutput()
		if err != nil {
			buildOnce.err = fmt.Errorf("build nats-server: %v\n%s", err, out)
			return
		}
		buildOnce.bin = bin
	})
	return buildOnce.bin, buildOnce.err
}

// StartProcessCluster starts n nats-server processes on 127.0.0.1 and
// returns once JetStream answers through every node. They are killed when
// the test ends.
func StartProcessCluster(t testing.TB, n int) *ProcessCluster {
	t.Helper()
	bin, err := serverBinary()
	if err != nil {
		t.Fatalf("natsserver: %v", err)
	}
	ports, err := freePorts(2 * n)
	if err != nil {
		t.Fatalf("natsserver: %v", err)
	}
	c := &ProcessCluster{name: fmt.Sprintf("herald-proc-%d", time.Now().UnixNano()), bin: bin}
	t.Cleanup(c.killAll)
	for i := range n {
		nd := &procNode{name: fmt.Sprintf("p%d", i), port: ports[2*i], route: ports[2*i+1], store: t.TempDir()}
		var routes []string
		for j := range n {
			if j != i {
				routes = append(routes, "nats-route://127.0.0.1:"+strconv.Itoa(ports[2*j+1]))
			}
		}
		nd.args = []string{"-a", "127.0.0.1", "-p", strconv.Itoa(nd.port), "-n", nd.name, "-js", "-sd", nd.store,
			"--cluster_name", c.name, "--cluster", "nats://127.0.0.1:" + strconv.Itoa(nd.route), "--routes", strings.Join(routes, ",")}
		if nd.log, err = os.Create(filepath.Join(nd.store, "server.log")); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, nd)
		if err := c.start(i); err != nil {
			t.Fatalf("natsserver: %v", err)
		}
	}
	for i := range n {
		if err := c.waitJetStream(i, ClusterReadyTimeout); err != nil {
			t.Fatalf("natsserver: %v", err)
		}
	}
	if err := c.waitPlacement(n, ClusterReadyTimeout); err != nil {
		t.Fatalf("natsserver: %v", err)
	}
	return c
}

// waitPlacement waits until the cluster can place a stream on n servers:
// every node answering is not enough, the meta leader must also have
// seen each of them as a peer.
func (c *ProcessCluster) waitPlacement(n int, d time.Duration) error {
	nc, err := nats.Connect(c.URL(), nats.Timeout(time.Second))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("HERALD_PROBE_%d", time.Now().UnixNano())
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"herald-probe." + name}, Replicas: n, Storage: jetstream.MemoryStorage})
		if err == nil {
			err = js.DeleteStream(ctx, name)
			cancel()
			return err
		}
		cancel()
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("cluster %s cannot place a stream on %d servers after %v: %v", c.name, n, d, last)
}

func (c *ProcessCluster) start(i int) error {
	nd := c.nodes[i]
	nd.cmd = exec.Command(c.bin, nd.args...)
	nd.cmd.Stdout, nd.cmd.Stderr = nd.log, nd.log
	if err := nd.cmd.Start(); err != nil {
		return fmt.Errorf("start nats-server %s: %w", nd.name, err)
	}
	nd.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(nd.cmd, nd.exited)
	return nil
}

// waitJetStream waits until node i answers a JetStream request (its meta
// leader is known to it).
func (c *ProcessCluster) waitJetStream(i int, d time.Duration) error {
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		nc, err := nats.Connect(c.URLs()[i], nats.Timeout(time.Second))
		if err == nil {
			js, _ := jetstream.New(nc)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err = js.AccountInfo(ctx)
			cancel()
			nc.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("nats-server %s: JetStream not ready in %v: %v (its log: %s)", c.nodes[i].name, d, last, c.nodes[i].log.Name())
}

// URLs are the nodes' client URLs, in node order.
func (c *ProcessCluster) URLs() []string {
	out := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		out[i] = "nats://127.0.0.1:" + strconv.Itoa(nd.port)
	}
	return out
}

// URL is every node's client URL, comma separated.
func (c *ProcessCluster) URL() string { return strings.Join(c.URLs(), ",") }

// Index is the node named name (a server name as JetStream reports it),
// -1 when none is.
func (c *ProcessCluster) Index(name string) int {
	for i, nd := range c.nodes {
		if nd.name == name {
			return i
		}
	}
	return -1
}

// Kill sends node i SIGKILL and waits until it is gone. Its store stays.
func (c *ProcessCluster) Kill(i int) error {
	nd := c.nodes[i]
	if nd.cmd == nil || nd.cmd.Process == nil {
		return errors.New("natsserver: node not running")
	}
	if err := nd.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-nd.exited
	return nil
}

// Restart starts node i again on its ports and store and waits until it
// answers JetStream requests.
func (c *ProcessCluster) Restart(i int) error {
	if err := c.start(i); err != nil {
		return err
	}
	return c.waitJetStream(i, ClusterReadyTimeout)
}

func (c *ProcessCluster) killAll() {
	for _, nd := range c.nodes {
		if nd.cmd != nil && nd.cmd.Process != nil {
			_ = nd.cmd.Process.Signal(syscall.SIGKILL)
			<-nd.exited
		}
		if nd.log != nil {
			_ = nd.log.Close()
		}
	}
}
