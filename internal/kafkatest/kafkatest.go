package kafkatest

import (
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Mechanism names accepted by SASL, as Kafka spells them.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

type config struct {
	brokers int
	topics  map[string]int32
	users   []user
	tls     *tls.Config
	// limited are users held to their ACLs; any of them turns ACL
	// checks on.
	limited []limitedUser
}

type user struct{ mechanism, name, password string }

type limitedUser struct {
	user
	acls []kfake.ACL
}

// Option configures Start.
type Option func(*config)

// Brokers sets how many brokers the cluster runs (default 1).
func Brokers(n int) Option { return func(c *config) { c.brokers = n } }

// Topic seeds a topic with the given number of partitions.
func Topic(name string, partitions int32) Option {
	return func(c *config) { c.topics[name] = partitions }
}

// SASL requires authentication and adds a user allowed everything. mechanism
// is Plain, ScramSHA256 or ScramSHA512; repeat the option for more users.
func SASL(mechanism, name, password string) Option {
	return func(c *config) { c.users = append(c.users, user{mechanism, name, password}) }
}

// LimitedUser requires authentication and adds a user allowed only what
// acls grant (kfake.ACL, its Principal set to the user): a reader granted
// Read but not DescribeConfigs, say. The brokers then check ACLs for every
// user but those SASL adds.
func LimitedUser(mechanism, name, password string, acls ...kfake.ACL) Option {
	return func(c *config) { c.limited = append(c.limited, limitedUser{user{mechanism, name, password}, acls}) }
}

// TLS makes the brokers accept only TLS connections, with cfg (its
// certificates, and ClientAuth to require client certificates).
func TLS(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

// Cluster is a running (or stopped) in-process Kafka cluster.
type Cluster struct {
	cfg   config
	dir   string
	mu    sync.Mutex
	ports []int
	kc    *kfake.Cluster
}

// Start starts a cluster and stops it when the test ends. It fails the test
// with one clear message if the brokers cannot listen.
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	cfg := config{brokers: 1, topics: map[string]int32{}}
	for _, o := range opts {
		o(&cfg)
	}
	all := cfg.users
	for _, u := range cfg.limited {
		all = append(all, u.user)
	}
	for _, u := range all {
		switch u.mechanism {
		case Plain, ScramSHA256, ScramSHA512:
		default:
			t.Fatalf("kafkatest: SASL mechanism %q: want %s, %s or %s", u.mechanism, Plain, ScramSHA256, ScramSHA512)
		}
	}
	c := &Cluster{cfg: cfg, dir: t.TempDir()}
	if err := c.start(); err != nil {
		t.Fatalf("kafkatest: start in-process Kafka (kfake): %v", err)
	}
	t.Cleanup(c.Stop)
	return c
}

func (c *Cluster) start() error {
	opts := []kfake.Opt{
		kfake.NumBrokers(c.cfg.brokers),
		kfake.DataDir(c.dir),
		kfake.ClusterID("herald-test"),
	}
	if c.ports != nil {
		opts = append(opts, kfake.Ports(c.ports...))
	}
	for name, p := range c.cfg.topics {
		opts = append(opts, kfake.SeedTopics(p, name))
	}
	if c.cfg.tls != nil {
		opts = append(opts, kfake.TLS(c.cfg.tls))
	}
	if len(c.cfg.users) > 0 || len(c.cfg.limited) > 0 {
		opts = append(opts, kfake.EnableSASL())
		for _, u := range c.cfg.users {
			opts = append(opts, kfake.Superuser(u.mechanism, u.name, u.password))
		}
	}
	if len(c.cfg.limited) > 0 {
		opts = append(opts, kfake.EnableACLs())
		for _, u := range c.cfg.limited {
			opts = append(opts, kfake.User(u.mechanism, u.name, u.password, u.acls...))
		}
	}
	kc, err := kfake.NewCluster(opts...)
	if err != nil {
		return err
	}
	if c.ports == nil {
		for _, a := range kc.ListenAddrs() {
			_, p, err := net.SplitHostPort(a)
			if err != nil {
				kc.Close()
				return fmt.Errorf("broker address %q: %w", a, err)
			}
			n, _ := strconv.Atoi(p)
			c.ports = append(c.ports, n)
		}
	}
	c.kc = kc
	return nil
}

// Addrs returns the brokers' host:port addresses. They stay the same across
// Stop and Restart.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.ports))
	for i, p := range c.ports {
		out[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return out
}

// Kfake returns the running kfake cluster, for fault injection beyond
// Stop/Restart (nil while stopped).
func (c *Cluster) Kfake() *kfake.Cluster {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kc
}

// Stop shuts every broker down: listeners close, client connections drop,
// and the data is saved for Restart. Stopping a stopped cluster does
// nothing.
func (c *Cluster) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kc != nil {
		c.kc.Close()
		c.kc = nil
	}
}

// Restart starts a stopped cluster again on the same ports with the data it
// held. Another process may have taken a port in between; Restart retries
// for a few seconds, then fails the test saying which port.
func (c *Cluster) Restart(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kc != nil {
		t.Fatalf("kafkatest: Restart of a running cluster; call Stop first")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := c.start()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kafkatest: restart on ports %v: %v", c.ports, err)
		}
		// Waiting for the kernel to release a port is waiting on a
		// condition we cannot observe otherwise; poll it.
		time.Sleep(50 * time.Millisecond)
	}
}
