package natssink_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/testtls"
	"github.com/zkherald/herald/sinks/natssink"
	"github.com/zkherald/herald/sinks/sinktest"
)

// dial connects a fresh sink and writes one event, returning the first error.
func dialAndWrite(t *testing.T, opts natssink.Options) error {
	t.Helper()
	s, err := natssink.New(opts)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Connect(ctx); err != nil {
		return err
	}
	return s.Write(ctx, sinktest.Events(t.Name(), 1, 1))
}

// refused checks that err is a connect error that names the URL (without
// secrets), says what to check, and never shows the secret.
func refused(t *testing.T, err error, url, secret, hint string) {
	t.Helper()
	if !errors.Is(err, natssink.ErrConnect) {
		t.Fatalf("want ErrConnect, got %v", err)
	}
	msg := err.Error()
	if strings.Contains(msg, secret) {
		t.Fatalf("error leaks the secret %q: %s", secret, msg)
	}
	if !strings.Contains(msg, natssink.Redact(url)) || !strings.Contains(msg, hint) {
		t.Fatalf("error %q should name %s and say %q", msg, natssink.Redact(url), hint)
	}
}

func TestUserPassword(t *testing.T) {
	srv := natsserver.Start(t, natsserver.WithUser("bridge", "s3cret-pw"))
	if err := dialAndWrite(t, natssink.Options{URL: srv.URL(), User: "bridge", Password: "s3cret-pw"}); err != nil {
		t.Fatalf("right password refused: %v", err)
	}
	err := dialAndWrite(t, natssink.Options{URL: srv.URL(), User: "bridge", Password: "wrong-pw-123"})
	refused(t, err, srv.URL(), "wrong-pw-123", "check the user/password")

	// Credentials in the URL work and are redacted in errors too.
	withPW := strings.Replace(srv.URL(), "nats://", "nats://bridge:s3cret-pw@", 1)
	if err := dialAndWrite(t, natssink.Options{URL: withPW}); err != nil {
		t.Fatalf("URL credentials refused: %v", err)
	}
	badURL := strings.Replace(srv.URL(), "nats://", "nats://bridge:url-secret-9@", 1)
	err = dialAndWrite(t, natssink.Options{URL: badURL})
	refused(t, err, badURL, "url-secret-9", "credentials")
}

func TestToken(t *testing.T) {
	srv := natsserver.Start(t, natsserver.WithToken("tok-abc-123"))
	if err := dialAndWrite(t, natssink.Options{URL: srv.URL(), Token: "tok-abc-123"}); err != nil {
		t.Fatalf("right token refused: %v", err)
	}
	refused(t, dialAndWrite(t, natssink.Options{URL: srv.URL(), Token: "tok-wrong-456"}), srv.URL(), "tok-wrong-456", "token")
	refused(t, dialAndWrite(t, natssink.Options{URL: srv.URL()}), srv.URL(), "tok-abc-123", "credentials")
}

// TestTokenInTheURLIsNeverLogged: a token given as the URL's user
// (nats://TOKEN@host) was logged in clear on every connect and reconnect,
// where the client's own redaction masks passwords only.
func TestTokenInTheURLIsNeverLogged(t *testing.T) {
	srv := natsserver.Start(t, natsserver.WithToken("tok-in-url-789"))
	logs := &syncWriter{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	u := strings.Replace(srv.URL(), "nats://", "nats://tok-in-url-789@", 1)
	if err := dialAndWrite(t, natssink.Options{URL: u, Logger: log}); err != nil {
		t.Fatalf("right token refused: %v", err)
	}
	if got := logs.String(); strings.Contains(got, "tok-in-url-789") || !strings.Contains(got, "connected to NATS") {
		t.Errorf("logs of a connect with a token in the URL:\n%s", got)
	}
	// And on reconnect, after the server went away and came back.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := natssink.Options{URL: u, Logger: log}.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	srv.Restart(t)
	for !strings.Contains(logs.String(), "reconnected to NATS") && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond) // polling the log, not ordering
	}
	if got := logs.String(); strings.Contains(got, "tok-in-url-789") || !strings.Contains(got, "reconnected to NATS") {
		t.Errorf("logs of a reconnect with a token in the URL:\n%s", got)
	}
}

// TestUnparseableURLIsABadOptionThatHidesItsPassword: a URL Go cannot
// parse (a '%' not followed by two hex digits in a password, a bad port)
// was retried as unreachable, and the parse error, which quotes the URL
// whole, printed the password each time. It is a bad option at once, and
// says what to check without the secret.
func TestUnparseableURLIsABadOptionThatHidesItsPassword(t *testing.T) {
	for _, u := range []string{"nats://u:Pa%zzw0rd@127.0.0.1:4222", "nats://u:Pa55w0rd@127.0.0.1:notaport", "u:Pa55w0rd@127.0.0.1:notaport"} {
		_, err := natssink.New(natssink.Options{URL: u})
		if !errors.Is(err, natssink.ErrConfig) || !strings.Contains(err.Error(), "does not parse") {
			t.Errorf("%s: %v; want ErrConfig saying it does not parse", u, err)
		}
		if err != nil && (strings.Contains(err.Error(), "Pa%zzw0rd") || strings.Contains(err.Error(), "Pa55w0rd")) {
			t.Errorf("%s: the error repeats the password: %v", u, err)
		}
		o := natssink.Options{URL: u}
		if got := o.Scrub(fmt.Errorf("parse %q: invalid", u)).Error(); strings.Contains(got, "w0rd") {
			t.Errorf("%s: Scrub left the password: %s", u, got)
		}
	}
	if _, err := natssink.New(natssink.Options{URL: "127.0.0.1:4222,nats://u:p%25w@h:1"}); err != nil {
		t.Errorf("URLs that parse refused: %v", err)
	}
}

// syncWriter keeps what the client's goroutines log.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestNKey(t *testing.T) {
	dir := t.TempDir()
	pub, seed, err := natsserver.NewNKeyUser(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := natsserver.Start(t, natsserver.WithNKeyUsers(pub))
	if err := dialAndWrite(t, natssink.Options{URL: srv.URL(), NKeySeedFile: seed}); err != nil {
		t.Fatalf("nkey refused: %v", err)
	}
	_, other, err := natsserver.NewNKeyUser(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	refused(t, dialAndWrite(t, natssink.Options{URL: srv.URL(), NKeySeedFile: other}), srv.URL(), "SU", "NKey")
	err = dialAndWrite(t, natssink.Options{URL: srv.URL(), NKeySeedFile: dir + "/missing.nk"})
	if !errors.Is(err, natssink.ErrConfig) || !strings.Contains(err.Error(), "missing.nk") {
		t.Fatalf("missing seed file: %v, want ErrConfig naming the file", err)
	}
}

func TestTLS(t *testing.T) {
	files, err := testtls.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := natsserver.Start(t, natsserver.WithTLS(files, false))
	if err := dialAndWrite(t, natssink.Options{URL: srv.URL(), TLS: natssink.TLSOptions{CAFile: files.CA}}); err != nil {
		t.Fatalf("TLS with the right CA: %v", err)
	}
	// Without our CA the system roots do not trust the server.
	err = dialAndWrite(t, natssink.Options{URL: srv.URL(), TLS: natssink.TLSOptions{ServerName: "localhost"}})
	refused(t, err, srv.URL(), "\x00", "certificate")
	// Without TLS options the client still upgrades (the server requires
	// TLS) and then does not trust the certificate.
	refused(t, dialAndWrite(t, natssink.Options{URL: srv.URL()}), srv.URL(), "\x00", "certificate")
}

func TestTLSClientCertificate(t *testing.T) {
	files, err := testtls.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := natsserver.Start(t, natsserver.WithTLS(files, true))
	ok := natssink.TLSOptions{CAFile: files.CA, CertFile: files.ClientCert, KeyFile: files.ClientKey}
	if err := dialAndWrite(t, natssink.Options{URL: srv.URL(), TLS: ok}); err != nil {
		t.Fatalf("client certificate refused: %v", err)
	}
	if err := dialAndWrite(t, natssink.Options{URL: srv.URL(), TLS: natssink.TLSOptions{CAFile: files.CA}}); !errors.Is(err, natssink.ErrConnect) {
		t.Fatalf("no client certificate: %v, want ErrConnect", err)
	}
}

func TestConnectNoServer(t *testing.T) {
	srv := natsserver.Start(t)
	u := srv.URL()
	srv.Shutdown()
	refused(t, dialAndWrite(t, natssink.Options{URL: u}), u, "\x00", "check")
}

// TestCreds logs in with a .creds file (user JWT and seed, as nsc writes
// it) to a server in operator mode; a user another operator signed is
// refused with a hint naming the creds file.
func TestCreds(t *testing.T) {
	op, err := natsserver.NewOperator()
	if err != nil {
		t.Fatal(err)
	}
	srv := natsserver.Start(t, natsserver.WithOperator(op))
	dir := t.TempDir()
	creds, err := op.UserCreds(dir, "bridge")
	if err != nil {
		t.Fatal(err)
	}
	if err := dialAndWrite(t, natssink.Options{URL: srv.URL(), CredsFile: creds}); err != nil {
		t.Fatalf("creds refused: %v", err)
	}
	stranger, err := natsserver.NewOperator()
	if err != nil {
		t.Fatal(err)
	}
	other, err := stranger.UserCreds(t.TempDir(), "stranger")
	if err != nil {
		t.Fatal(err)
	}
	refused(t, dialAndWrite(t, natssink.Options{URL: srv.URL(), CredsFile: other}), srv.URL(), "SUA", "creds file")
	refused(t, dialAndWrite(t, natssink.Options{URL: srv.URL()}), srv.URL(), "SUA", "credentials")
	err = dialAndWrite(t, natssink.Options{URL: srv.URL(), CredsFile: dir + "/missing.creds"})
	if !errors.Is(err, natssink.ErrConfig) || !strings.Contains(err.Error(), "missing.creds") {
		t.Fatalf("missing creds file: %v, want ErrConfig naming the file", err)
	}
}
