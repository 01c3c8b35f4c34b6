package natsserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Sentinel errors.
var (
	// ErrConfig is wrapped by errors about a bad Config.
	ErrConfig = errors.New("natsserver: bad configuration")
	// ErrNotReady is returned when the server did not accept connections in
	// time.
	ErrNotReady = errors.New("natsserver: server not ready")
)

// ReadyTimeout is how long Run and Start wait for the server to accept
// connections.
const ReadyTimeout = 10 * time.Second

// Config says where an embedded server listens and keeps its JetStream files.
type Config struct {
	// Host is the interface to listen on; "" means 127.0.0.1.
	Host string
	// Port is the client port; 0 lets the kernel choose one (read it back
	// with ClientURL on the returned server).
	Port int
	// StoreDir is JetStream's directory. Required: an embedded server without
	// a store would lose the HERALD stream on restart.
	StoreDir string
	// Name is the server's name; "" means "herald-embedded". JetStream
	// expects it to stay the same across restarts of one store.
	Name string
	// Log, when true, lets the server write its own log to stderr.
	Log bool
}

// Validate reports what is wrong with c.
func (c Config) Validate() error {
	if c.StoreDir == "" {
		return fmt.Errorf("%w: StoreDir is empty; give a directory for JetStream's files", ErrConfig)
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("%w: port %d is outside 0..65535 (0 lets the kernel choose)", ErrConfig, c.Port)
	}
	if c.Host != "" && net.ParseIP(c.Host) == nil && c.Host != "localhost" {
		return fmt.Errorf("%w: host %q is not an IP address", ErrConfig, c.Host)
	}
	return nil
}

func (c Config) options() *server.Options {
	host := c.Host
	if host == "" {
		host = "127.0.0.1"
	}
	port := c.Port
	if port == 0 {
		port = server.RANDOM_PORT // the server listens on :0, the kernel picks
	}
	name := c.Name
	if name == "" {
		name = "herald-embedded"
	}
	return &server.Options{
		ServerName:             name,
		Host:                   host,
		Port:                   port,
		JetStream:              true,
		StoreDir:               c.StoreDir,
		NoSigs:                 true,
		NoLog:                  !c.Log,
		DisableJetStreamBanner: true,
		MaxPayload:             server.MAX_PAYLOAD_SIZE,
	}
}

// Run starts an embedded nats-server with JetStream and returns it once it
// accepts connections. The server shuts down when ctx ends; callers that
// need to know when it is gone call WaitForShutdown on it.
func Run(ctx context.Context, c Config) (*server.Server, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s, err := start(c.options(), c.Log)
	if err != nil {
		return nil, err
	}
	go func() {
		<-ctx.Done()
		s.Shutdown()
	}()
	return s, nil
}

// start creates and starts a server from opts and waits until it is ready.
func start(opts *server.Options, log bool) (*server.Server, error) {
	if opts.Port != server.RANDOM_PORT {
		// A taken port is known at once; the server would only say so
		// in its log and leave us waiting ReadyTimeout.
		addr := net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("%w: cannot listen on %s: %w (another bridge, or another NATS server, uses it)", ErrNotReady, addr, err)
		}
		_ = ln.Close()
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsserver: create server on %s:%d: %w", opts.Host, opts.Port, err)
	}
	if log {
		s.ConfigureLogger()
	}
	s.Start()
	if !s.ReadyForConnections(ReadyTimeout) {
		s.Shutdown()
		return nil, fmt.Errorf("%w: not accepting connections on %s:%d after %s (is %s writable?)",
			ErrNotReady, opts.Host, opts.Port, ReadyTimeout, opts.StoreDir)
	}
	return s, nil
}
