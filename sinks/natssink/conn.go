package natssink

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/zkherald/herald/internal/pemtls"
)

// Dial connects to NATS with o. It fails fast when no server answers (the
// caller retries Connect with its own backoff); once connected, the
// connection reconnects by itself forever with exponential backoff.
//
// Errors wrap ErrConfig or ErrConnect, name the URL (redacted) and say what
// to check.
func (o Options) Dial(ctx context.Context) (*nats.Conn, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	natsOpts, err := o.natsOptions(ctx)
	if err != nil {
		return nil, err
	}
	type result struct {
		nc  *nats.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := nats.Connect(o.URL, natsOpts...)
		if errors.Is(err, nats.ErrNoServers) {
			err = o.whyNoServer(ctx, err, natsOpts)
		}
		done <- result{nc, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, o.connectError(r.err)
		}
		o.log("connected to NATS", "url", Redact(r.nc.ConnectedUrl()))
		return r.nc, nil
	case <-ctx.Done():
		go func() { // do not leak a connection that arrives late
			if r := <-done; r.nc != nil {
				r.nc.Close()
			}
		}()
		return nil, fmt.Errorf("%w: %s: %w", ErrConnect, Redact(o.URL), ctx.Err())
	}
}

// pingInterval is how often a connection asks its server whether it is
// there (see natsOptions).
const pingInterval = 5 * time.Second

// perServer is how long one server may take to answer a connect: Timeout
// split between the servers of URL (at least a second), so that a server
// early in the list that accepts and then says nothing (frozen, a paused
// VM) costs a share of the wait, not all of it, before the next is tried.
func (o Options) perServer() time.Duration {
	n := len(strings.Split(o.URL, ","))
	return min(o.Timeout, max(time.Second, o.Timeout/time.Duration(n)))
}

func (o Options) natsOptions(ctx context.Context) ([]nats.Option, error) {
	timeout := o.perServer()
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.Timeout(timeout),
		// A server that stops answering without closing the connection
		// (frozen, a paused VM, a cut without a reset) is noticed after
		// two unanswered pings, 10 to 15 s, rather than the client's
		// default of two of every two minutes: until then every write
		// and every read waits on it while the rest of the cluster serves.
		nats.PingInterval(pingInterval),
		nats.MaxPingsOutstanding(2),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(backoff(o.ReconnectWait, o.MaxReconnectWait)),
		// Publishing while disconnected fails at once instead of queueing:
		// the pipeline keeps the batch and retries, which keeps order.
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if nc.IsClosed() { // closed on purpose
				o.log("disconnected from NATS", "url", Redact(o.URL))
				return
			}
			// Nothing reaches NATS until it reconnects: events wait in
			// the backlog, and the sink reads unhealthy meanwhile.
			o.warn("disconnected from NATS; reconnecting, nothing is delivered meanwhile", "url", Redact(o.URL), "err", o.Scrub(err))
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			o.log("reconnected to NATS", "url", Redact(nc.ConnectedUrl()))
		}),
		nats.ClosedHandler(func(nc *nats.Conn) { o.log("NATS connection closed", "url", Redact(o.URL)) }),
		nats.ErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
			o.log("NATS asynchronous error", "err", o.Scrub(err))
		}),
	}
	switch {
	case o.User != "":
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	case o.Token != "":
		opts = append(opts, nats.Token(o.Token))
	case o.NKeySeedFile != "":
		opt, err := nats.NkeyOptionFromSeed(o.NKeySeedFile)
		if err != nil {
			// The error may quote the file's content; say only what to fix.
			return nil, fmt.Errorf("%w: NKey seed file %s is unreadable or holds no user seed (it starts with SU)", ErrConfig, o.NKeySeedFile)
		}
		opts = append(opts, opt)
	case o.CredsFile != "":
		if _, err := os.Stat(o.CredsFile); err != nil {
			return nil, fmt.Errorf("%w: creds file: %w", ErrConfig, err)
		}
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	}
	if o.TLS.enabled() {
		cfg, err := o.TLS.config()
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Secure(cfg))
	}
	return opts, nil
}

func (t TLSOptions) config() (*tls.Config, error) {
	cfg, err := pemtls.ClientConfig(t.CAFile, t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	cfg.ServerName = t.ServerName
	cfg.InsecureSkipVerify = t.InsecureSkipVerify //nolint:gosec // off unless asked for
	return cfg, nil
}

// backoff doubles the delay per attempt from first up to limit, with up to
// 20% jitter so that many bridges do not reconnect in step.
func backoff(first, limit time.Duration) nats.ReconnectDelayHandler {
	return func(attempts int) time.Duration {
		d := first
		for i := 1; i < attempts && d < limit; i++ {
			d *= 2
		}
		d = min(d, limit)
		return d + time.Duration(rand.Int64N(int64(d)/5+1))
	}
}

// whyNoServer finds why no server of several took the connection. The
// client keeps only the last server's error, and a dead one's stands for
// none: a live server's refusal (wrong credentials, TLS) was lost behind
// "no servers available". Each server is asked alone, and the first
// reason other than silence is returned, naming that server.
func (o Options) whyNoServer(ctx context.Context, err error, natsOpts []nats.Option) error {
	urls := strings.Split(o.URL, ",")
	if len(urls) < 2 {
		return err
	}
	quiet := append(natsOpts[:len(natsOpts):len(natsOpts)], nats.ClosedHandler(nil), nats.DisconnectErrHandler(nil), nats.NoReconnect())
	for _, u := range urls {
		if ctx.Err() != nil {
			break
		}
		nc, why := nats.Connect(strings.TrimSpace(u), quiet...)
		if why == nil {
			nc.Close() // it answers now: the list's error stands
			continue
		}
		if !errors.Is(why, nats.ErrNoServers) {
			return fmt.Errorf("%s: %w", Redact(u), why)
		}
	}
	return err
}

// connectError explains a failed connect: which URL, and what to check.
func (o Options) connectError(err error) error {
	return o.Scrub(fmt.Errorf("%w: %s: %w; %s", ErrConnect, Redact(o.URL), err, o.hint(err)))
}

// hint says what to check after a failed connect, naming the option at
// fault and herald's flag for it.
func (o Options) hint(err error) string {
	msg := strings.ToLower(err.Error())
	var certErr *tls.CertificateVerificationError
	var hostErr x509.HostnameError
	var authErr x509.UnknownAuthorityError
	// The server ended the handshake, or hung up right after it: how one
	// that verifies clients refuses a certificate, or the lack of one.
	refusedTLS := strings.Contains(msg, "after tls handshake") || strings.Contains(msg, "remote error: tls:")
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired),
		strings.Contains(msg, "authorization"):
		return "the server refused our credentials; check the user/password, token, NKey seed or creds file"
	case o.CredsFile != "" && (strings.Contains(msg, "nkeys") || strings.Contains(msg, "key pair") ||
		strings.Contains(msg, "signing nonce") || strings.Contains(msg, "jwt")):
		return "the creds file holds no usable user JWT and seed (damaged, cut short, or half-written); give one as nsc writes it (Options.CredsFile, herald's --nats-creds)"
	case errors.Is(err, nats.ErrSecureConnRequired):
		return "the server requires TLS; set a TLS CA file (or use a tls:// URL)"
	case errors.Is(err, nats.ErrSecureConnWanted):
		return "TLS is configured but the server does not offer it; drop the TLS options or enable TLS on the server"
	case errors.As(err, &certErr), errors.As(err, &hostErr), errors.As(err, &authErr):
		return "the server certificate is not trusted; check the TLS CA file and the server name"
	case refusedTLS && o.TLS.CertFile == "":
		return "the server hung up on the TLS handshake, as one that wants a client certificate does: give one it trusts (TLS.CertFile and TLS.KeyFile, herald's --nats-cert and --nats-key)"
	case refusedTLS:
		return "the server hung up on the TLS handshake: it refused our client certificate; give one that a CA it trusts signed and that is valid now (TLS.CertFile and TLS.KeyFile, herald's --nats-cert and --nats-key)"
	case errors.Is(err, nats.ErrNoServers):
		return "no server answered; check the URL, that NATS runs, and that no firewall is in the way"
	}
	return "check that a NATS server listens at that address and the URL is right"
}

func (o Options) log(msg string, args ...any) {
	if o.Logger != nil {
		o.Logger.Info(msg, args...)
	}
}

func (o Options) warn(msg string, args ...any) {
	if o.Logger != nil {
		o.Logger.Warn(msg, args...)
	}
}

// Reconnecting is what Connect returns while nc, dialled before, has lost
// its server and is reconnecting by itself: dialling again would not help,
// and saying "connected" would let a sink that cannot deliver read healthy.
func (o Options) Reconnecting() error {
	return fmt.Errorf("%w: %s: the connection is lost and reconnecting by itself; check that the NATS server runs", ErrConnect, Redact(o.URL))
}
