package natssink

import (
	"errors"
	"fmt"
	"github.com/zkherald/herald/internal/addr"
	"log/slog"
	"strings"
	"time"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrConfig is wrapped by every error about bad Options.
	ErrConfig = errors.New("natssink: bad options")
	// ErrConnect is wrapped by every failure to reach or log in to NATS.
	ErrConnect = errors.New("natssink: cannot connect to NATS")
	// ErrClosed is returned by Write after Close.
	ErrClosed = errors.New("natssink: sink is closed")
)

// Options says how to reach NATS and how to prove who we are. The NATS core
// sink and the JetStream sink share it. Secrets in it (password, token) are
// never logged or printed in errors.
type Options struct {
	// URL is one NATS URL or several separated by commas,
	// e.g. "nats://n1:4222,nats://n2:4222". Credentials in a URL are
	// accepted and redacted in messages.
	URL string
	// Name is the client connection name the server shows in its monitoring
	// ("herald" when empty).
	Name string

	// At most one way to authenticate: User and Password, Token, an NKey seed
	// file, or a .creds file (JWT and seed, as nsc writes it).
	User, Password string
	Token          string
	NKeySeedFile   string
	CredsFile      string

	// TLS is used when any of its fields is set, or the URL says tls://.
	TLS TLSOptions

	// ReconnectWait is the first delay between reconnect attempts (default
	// 100ms); it doubles per attempt up to MaxReconnectWait (default 5s).
	// Reconnecting never gives up.
	ReconnectWait, MaxReconnectWait time.Duration
	// Timeout bounds a connect attempt and a Write without a ctx deadline
	// (default 10s). With several servers in URL, each one tried gets its
	// share of it (Timeout/n, at least 1s).
	Timeout time.Duration

	// Logger receives connection events (nil: none).
	Logger *slog.Logger
}

// TLSOptions configures TLS towards NATS.
type TLSOptions struct {
	// CAFile is a PEM file of the CAs that sign the server certificate
	// (empty: the system roots).
	CAFile string
	// CertFile and KeyFile are a client certificate and its key, for servers
	// that verify clients. Both or neither.
	CertFile, KeyFile string
	// ServerName overrides the name checked in the server certificate.
	ServerName string
	// InsecureSkipVerify turns off checking the server certificate. Off by
	// default; for tests only.
	InsecureSkipVerify bool
}

func (t TLSOptions) enabled() bool {
	return t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" || t.InsecureSkipVerify
}

// Validate reports what is wrong with o, without touching the network.
func (o Options) Validate() error {
	if strings.TrimSpace(o.URL) == "" {
		return fmt.Errorf("%w: no NATS URL; give one like nats://127.0.0.1:4222", ErrConfig)
	}
	for _, u := range strings.Split(o.URL, ",") {
		if strings.TrimSpace(u) == "" {
			return fmt.Errorf("%w: URL list %q has an empty entry", ErrConfig, Redact(o.URL))
		}
		if err := parses(strings.TrimSpace(u)); err != nil {
			return err
		}
	}
	n := 0
	for _, set := range []bool{o.User != "" || o.Password != "", o.Token != "", o.NKeySeedFile != "", o.CredsFile != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("%w: choose one way to authenticate: user/password, token, NKey seed file or creds file", ErrConfig)
	}
	if (o.User == "") != (o.Password == "") {
		return fmt.Errorf("%w: user and password go together; give both or neither", ErrConfig)
	}
	if (o.TLS.CertFile == "") != (o.TLS.KeyFile == "") {
		return fmt.Errorf("%w: TLS client certificate and key go together; give both or neither", ErrConfig)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"ReconnectWait", o.ReconnectWait}, {"MaxReconnectWait", o.MaxReconnectWait}, {"Timeout", o.Timeout}} {
		if d.v < 0 {
			return fmt.Errorf("%w: %s is negative (%s)", ErrConfig, d.name, d.v)
		}
	}
	if o.ReconnectWait > 0 && o.MaxReconnectWait > 0 && o.MaxReconnectWait < o.ReconnectWait {
		return fmt.Errorf("%w: MaxReconnectWait %s is below ReconnectWait %s", ErrConfig, o.MaxReconnectWait, o.ReconnectWait)
	}
	return nil
}

// withDefaults fills the zero fields.
func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = "herald"
	}
	if o.ReconnectWait == 0 {
		o.ReconnectWait = 100 * time.Millisecond
	}
	if o.MaxReconnectWait == 0 {
		o.MaxReconnectWait = 5 * time.Second
		if o.MaxReconnectWait < o.ReconnectWait {
			o.MaxReconnectWait = o.ReconnectWait
		}
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	return o
}

// String describes o without its secrets.
func (o Options) String() string {
	auth := "none"
	switch {
	case o.User != "":
		auth = "user " + o.User
	case o.Token != "":
		auth = "token"
	case o.NKeySeedFile != "":
		auth = "nkey " + o.NKeySeedFile
	case o.CredsFile != "":
		auth = "creds " + o.CredsFile
	}
	return fmt.Sprintf("nats %s (auth: %s, tls: %t)", Redact(o.URL), auth, o.TLS.enabled())
}

// parses checks one NATS URL as the client will read it. Its error never
// quotes the URL's user part.
func parses(u string) error {
	if err := addr.NATS(u); err != nil {
		return fmt.Errorf("%w: NATS URL %s: %v", ErrConfig, Redact(u), err)
	}
	return nil
}
