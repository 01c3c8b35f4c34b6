package natsserver

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/internal/testtls"
)

// Option changes the configuration of a server started by Start.
type Option func(*server.Options) error

// WithUser requires clients to log in with user and password.
func WithUser(user, password string) Option {
	return func(o *server.Options) error {
		if user == "" || password == "" {
			return fmt.Errorf("%w: WithUser needs a user and a password", ErrConfig)
		}
		o.Username, o.Password = user, password
		return nil
	}
}

// WithMaxPayload sets the largest message the server accepts.
func WithMaxPayload(bytes int32) Option {
	return func(o *server.Options) error {
		if bytes <= 0 {
			return fmt.Errorf("%w: WithMaxPayload needs a positive size", ErrConfig)
		}
		o.MaxPayload = bytes
		return nil
	}
}

// WithToken requires clients to present token.
func WithToken(token string) Option {
	return func(o *server.Options) error {
		if token == "" {
			return fmt.Errorf("%w: WithToken needs a token", ErrConfig)
		}
		o.Authorization = token
		return nil
	}
}

// WithNKeyUsers admits clients that prove they hold the seed of one of the
// given public user NKeys (see NewNKeyUser).
func WithNKeyUsers(publicKeys ...string) Option {
	return func(o *server.Options) error {
		for _, k := range publicKeys {
			if len(k) == 0 || k[0] != 'U' {
				return fmt.Errorf("%w: %q is not a public user NKey (they start with 'U')", ErrConfig, k)
			}
			o.Nkeys = append(o.Nkeys, &server.NkeyUser{Nkey: k})
		}
		return nil
	}
}

// WithTLS serves TLS with the server certificate in f. When verifyClients
// is true, clients must present a certificate signed by f's CA.
func WithTLS(f testtls.Files, verifyClients bool) Option {
	return func(o *server.Options) error {
		cfg, err := server.GenTLSConfig(&server.TLSConfigOpts{
			CertFile: f.ServerCert, KeyFile: f.ServerKey, CaFile: f.CA, Verify: verifyClients,
		})
		if err != nil {
			return fmt.Errorf("%w: TLS files %s, %s: %v", ErrConfig, f.ServerCert, f.ServerKey, err)
		}
		o.TLS, o.TLSVerify, o.TLSConfig, o.TLSTimeout = true, verifyClients, cfg, 5
		return nil
	}
}

// WithLog lets the server log to stderr (useful when a test fails obscurely).
func WithLog() Option {
	return func(o *server.Options) error { o.NoLog = false; return nil }
}

// Server is an embedded nats-server started for a test.
type Server struct {
	mu   sync.Mutex
	srv  *server.Server
	opts *server.Options
	url  string
}

// Start starts a nats-server with JetStream on 127.0.0.1 and a port the
// kernel picks, storing JetStream files in t.TempDir(). It is shut down when
// the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	o := Config{StoreDir: t.TempDir()}.options()
	for _, opt := range opts {
		if err := opt(o); err != nil {
			t.Fatalf("natsserver: %v", err)
		}
	}
	srv, err := start(o, !o.NoLog)
	if err != nil {
		t.Fatalf("natsserver: %v", err)
	}
	addr, ok := srv.Addr().(*net.TCPAddr)
	if !ok {
		srv.Shutdown()
		t.Fatalf("natsserver: server listens on %v, not TCP", srv.Addr())
	}
	o.Port = addr.Port // keep the port for Restart
	s := &Server{srv: srv, opts: o, url: "nats://" + net.JoinHostPort(o.Host, strconv.Itoa(addr.Port))}
	t.Cleanup(s.Shutdown)
	return s
}

// URL is the client URL, without credentials.
func (s *Server) URL() string { return s.url }

// StoreDir is where JetStream keeps its files.
func (s *Server) StoreDir() string { return s.opts.StoreDir }

// NATS returns the running nats-server (nil while shut down).
func (s *Server) NATS() *server.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv
}

// Shutdown stops the server and waits until it is gone. Calling it on a
// stopped server does nothing.
func (s *Server) Shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return
	}
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
	s.srv = nil
}

// Restart stops the server if it runs and starts it again on the same port
// with the same JetStream store, so streams and KV buckets survive.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Shutdown()
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	// The port was ours a moment ago; give the kernel a moment if it still
	// holds it, but never longer than the deadline.
	deadline := time.Now().Add(5 * time.Second)
	for {
		o := *s.opts
		var srv *server.Server
		if srv, err = start(&o, !o.NoLog); err == nil {
			s.srv = srv
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // retry cadence, not ordering
	}
	t.Fatalf("natsserver: restart on %s: %v", s.url, err)
}

// JetStream connects a plain client to url for t and returns its JetStream
// API; the connection closes when t ends.
func JetStream(t testing.TB, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
