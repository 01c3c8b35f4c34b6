package elect_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestSessionOverTLS runs an election over ZooKeeper's secureClientPort,
// and checks that an untrusted certificate and a plain-text port fail with
// errors that say so.
func TestSessionOverTLS(t *testing.T) {
	zk, files := zktest.ForTestTLS(t, false)
	pool := caPool(t, files.CA)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	s, err := elect.NewSession(ctx, zk.SecureAddrs(), elect.WithTLS(&tls.Config{RootCAs: pool}), elect.WithSessionTimeout(4*time.Second))
	if err != nil {
		t.Fatalf("session over TLS: %v", err)
	}
	defer s.Close()
	e, err := elect.NewElection(s, "/tls/election", elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Campaign(ctx, "over-tls")
	if err != nil {
		t.Fatalf("campaign over TLS: %v", err)
	}
	if !h.Held() {
		t.Fatal("sole candidate over TLS does not lead")
	}
	if p, err := e.Leader(ctx); err != nil || p.ID != "over-tls" {
		t.Fatalf("leader read over TLS: %+v, %v", p, err)
	}

	// The system roots do not know the test CA.
	_, err = elect.NewSession(ctx, zk.SecureAddrs(), elect.WithTLS(&tls.Config{}), elect.WithConnectTimeout(2*time.Second))
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted certificate: want an error naming the certificate, got %v", err)
	}
	// TLS to the plain port.
	_, err = elect.NewSession(ctx, zk.Addrs(), elect.WithTLS(&tls.Config{RootCAs: pool}), elect.WithConnectTimeout(2*time.Second))
	if err == nil || !strings.Contains(err.Error(), "secureClientPort") {
		t.Fatalf("TLS to the plain port: want an error naming secureClientPort, got %v", err)
	}
}

// TestRefusedClientCertificateOverTLS13: under TLS 1.3 the client's side
// of the handshake ends before the server has checked the client's
// certificate, so the refusal arrives as an alert on the first read, not
// in the handshake. It still fails at once, naming the certificate flags,
// not as a server that never answered.
func TestRefusedClientCertificateOverTLS13(t *testing.T) {
	f := zktest.NewTLSFiles(t)
	zk := zktest.ForTest(t, zkserver.Config{TLSKeyStore: f.KeyStore, TLSTrustStore: f.CA, TLSProtocol: "TLSv1.3"})
	pool := caPool(t, f.CA)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// With the certificate: a session, over TLS 1.3.
	cert, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	s, err := elect.NewSession(ctx, zk.SecureAddrs(), elect.WithTLS(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}))
	if err != nil {
		t.Fatalf("session over TLS 1.3 with a client certificate: %v", err)
	}
	s.Close()
	// Without one.
	began := time.Now()
	_, err = elect.NewSession(ctx, zk.SecureAddrs(), elect.WithTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}), elect.WithConnectTimeout(10*time.Second))
	if err == nil || !errors.Is(err, elect.ErrTLS) || !strings.Contains(err.Error(), "--zk-cert") {
		t.Fatalf("no client certificate over TLS 1.3: %v; want ErrTLS naming --zk-cert", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("the refusal took %v; a certificate error is not worth retrying", d)
	}
}

// TestClientCertificateIsTheIdentity: a session that gave the servers a
// client certificate has an identity, the certificate's subject, which an
// auth:: ACL names: a session under another certificate then reads and
// watches herald's nodes but cannot delete, write or join; a session under
// the same certificate can. The default ACL stays open (hosts usually hold
// certificates of their own); an ACL naming each host's subject lets them
// share a group. A server that never asks for the certificate gives no
// identity: an ACL that names auth:: is refused when the session connects.
func TestClientCertificateIsTheIdentity(t *testing.T) {
	zk, f := zktest.ForTestTLS(t, true)
	pool := caPool(t, f.CA)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	withCert := func(cert, key string) *tls.Config {
		c, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{c}}
	}
	mine, other := withCert(f.ClientCert, f.ClientKey), withCert(f.OtherClientCert, f.OtherClientKey)
	auth := append(gozk.AuthACL(gozk.PermAll), gozk.WorldACL(gozk.PermRead)...)

	plain, err := elect.NewSession(ctx, zk.SecureAddrs(), elect.WithTLS(mine))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if got := plain.DefaultACL(); !slices.Equal(got, gozk.WorldACL(gozk.PermAll)) {
		t.Errorf("default ACL with a client certificate alone: %s; want world:anyone:cdrwa", elect.FormatACL(got))
	}

	h, err := tlsLock(t, zk.SecureAddrs(), mine, auth, "/tls/identity").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	theirs := tlsConn(t, zk.SecureAddrs(), other)
	want := []gozk.ACL{{Perms: gozk.PermAll, Scheme: "x509", ID: "CN=herald test client"}, {Perms: gozk.PermRead, Scheme: "world", ID: "anyone"}}
	for _, p := range []string{"/tls/identity", h.NodePath()} {
		got, _, err := theirs.GetACL(p)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ACL of %s: %s, %v; want %s", p, elect.FormatACL(got), err, elect.FormatACL(want))
		}
	}
	if _, _, err := theirs.Get(h.NodePath()); err != nil {
		t.Errorf("another identity reading the holder's node: %v", err)
	}
	if _, err := theirs.Set(h.NodePath(), []byte("x"), -1); !errors.Is(err, gozk.ErrNoAuth) {
		t.Errorf("another identity writing the holder's node: %v; want ErrNoAuth", err)
	}
	if err := theirs.Delete(h.NodePath(), -1); !errors.Is(err, gozk.ErrNoAuth) {
		t.Errorf("another identity deleting the holder's node: %v; want ErrNoAuth", err)
	}
	if _, err := tlsLock(t, zk.SecureAddrs(), other, nil, "/tls/identity").Acquire(ctx); err == nil || !strings.Contains(err.Error(), "not allowed to create") {
		t.Errorf("another identity joining the group: %v; want a refusal naming the ACL", err)
	}
	if !h.Held() {
		t.Fatal("the holder lost the lock to another identity's attempts")
	}
	// The same certificate on another connection is the same identity.
	same := tlsConn(t, zk.SecureAddrs(), withCert(f.ClientCert, f.ClientKey))
	p, err := same.Create("/tls/identity/same-identity", nil, 0, gozk.WorldACL(gozk.PermAll))
	if err != nil {
		t.Errorf("the same certificate creating in the group: %v", err)
	} else if err := same.Delete(p, -1); err != nil {
		t.Error(err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Two hosts with certificates of their own share a group whose ACL
	// names both subjects.
	both, err := elect.ParseACL("x509:CN=herald test client:cdrwa,x509:CN=herald other client:cdrwa,world:anyone:r")
	if err != nil {
		t.Fatal(err)
	}
	var hs []*elect.Handle
	for _, cfg := range []*tls.Config{mine, other} {
		l := tlsLock(t, zk.SecureAddrs(), cfg, both, "/tls/two-hosts")
		if len(hs) > 0 {
			if err := hs[0].Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatalf("host %d of 2 taking the shared lock: %v", len(hs)+1, err)
		}
		hs = append(hs, h)
	}
	if err := hs[1].Release(ctx); err != nil {
		t.Fatal(err)
	}

	// A server that never asks for a certificate.
	open, of := zktest.ForTestTLS(t, false)
	pool = caPool(t, of.CA)
	began := time.Now()
	_, err = elect.NewSession(ctx, open.SecureAddrs(), elect.WithTLS(withCert(of.ClientCert, of.ClientKey)), elect.WithDefaultACL(auth))
	if err == nil || !strings.Contains(err.Error(), "ssl.clientAuth") {
		t.Errorf("auth:: ACL with a certificate the server never asked for: %v; want a refusal naming ssl.clientAuth", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("the refusal took %v; it is not worth retrying", d)
	}
}

// tlsLock is a Lock at path on a session over TLS with cfg whose nodes get
// acl (nil: the default), closed when the test ends.
func tlsLock(t *testing.T, addrs []string, cfg *tls.Config, acl []gozk.ACL, path string) *elect.Lock {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opts := []elect.SessionOption{elect.WithTLS(cfg)}
	if acl != nil {
		opts = append(opts, elect.WithDefaultACL(acl))
	}
	s, err := elect.NewSession(ctx, addrs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	l, err := elect.NewLock(s, path, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// tlsConn is a raw go-zookeeper connection over TLS with cfg.
func tlsConn(t *testing.T, addrs []string, cfg *tls.Config) *gozk.Conn {
	t.Helper()
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, cfg)
	}
	c, ev, err := gozk.Connect(addrs, 5*time.Second, gozk.WithDialer(dial), gozk.WithLogInfo(false), gozk.WithLogger(quietZK{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == gozk.StateHasSession {
				return c
			}
		case <-deadline:
			t.Fatal("no session over TLS within 10s")
		}
	}
}

// caPool is the pool of the test CA in file.
func caPool(t *testing.T, file string) *x509.CertPool {
	t.Helper()
	pemCA, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCA) {
		t.Fatal("test CA does not parse")
	}
	return pool
}

// quietZK drops go-zookeeper's log lines.
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// TestExpiredClientCertificateFailsAtOnce: ZooKeeper answers an expired
// client certificate with its own alert (certificate_unknown, not
// bad_certificate); under TLS 1.2 and 1.3 alike that is a refusal of the
// certificate, said at once and naming the flags, not a server that never
// answered. (herald's CLI refuses such a certificate before dialing.)
func TestExpiredClientCertificateFailsAtOnce(t *testing.T) {
	for _, proto := range []string{"", "TLSv1.3"} {
		f := zktest.NewTLSFiles(t)
		zk := zktest.ForTest(t, zkserver.Config{TLSKeyStore: f.KeyStore, TLSTrustStore: f.CA, TLSProtocol: proto})
		cert, err := tls.LoadX509KeyPair(f.ExpiredClientCert, f.ExpiredClientKey)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		began := time.Now()
		_, err = elect.NewSession(ctx, zk.SecureAddrs(), elect.WithTLS(&tls.Config{RootCAs: caPool(t, f.CA), Certificates: []tls.Certificate{cert}}),
			elect.WithConnectTimeout(10*time.Second))
		cancel()
		if err == nil || !errors.Is(err, elect.ErrTLS) || !strings.Contains(err.Error(), "refused the client certificate") {
			t.Fatalf("%s: an expired client certificate: %v; want ErrTLS saying it was refused", proto, err)
		}
		if d := time.Since(began); d > 5*time.Second {
			t.Errorf("%s: the refusal took %v; a certificate error is not worth retrying", proto, d)
		}
	}
}

// strangerMember is a TLS listener with a certificate no CA of the test
// trusts: an ensemble member mid-rotation, or misconfigured.
func strangerMember(t *testing.T) string { return elect.StrangerMember(t, "127.0.0.1:0") }

// TestOneMemberWithABadCertificate: a member whose certificate does not
// verify does not keep a session from the members that do; only when
// every member fails TLS does the session fail at once, saying so.
func TestOneMemberWithABadCertificate(t *testing.T) {
	zk, files := zktest.ForTestTLS(t, false)
	pool := caPool(t, files.CA)
	bad := strangerMember(t)
	for i := range 6 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := elect.NewSession(ctx, append([]string{bad}, zk.SecureAddrs()...), elect.WithTLS(&tls.Config{RootCAs: pool}), elect.WithConnectTimeout(10*time.Second))
		cancel()
		if err != nil {
			t.Fatalf("session %d with one member of a stranger CA: %v", i, err)
		}
		_ = s.Close()
	}
	began := time.Now()
	_, err := elect.NewSession(context.Background(), []string{bad, strangerMember(t)}, elect.WithTLS(&tls.Config{RootCAs: pool}), elect.WithConnectTimeout(10*time.Second))
	if err == nil || !errors.Is(err, elect.ErrTLS) || !strings.Contains(err.Error(), "1 other members failed TLS too") {
		t.Fatalf("every member of a stranger CA: %v; want ErrTLS saying all failed", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("every member failing TLS took %v to say so", d)
	}
}

// TestPlainClientToTheSecurePort: a client without TLS given the
// secureClientPort, which closes on its connect request, is told to give
// TLS, not only that ZooKeeper did not answer. The server closes a moment
// after the request, longer on a loaded machine: the connect timeout
// leaves it room (with 3 s, no close had come in time under load).
func TestPlainClientToTheSecurePort(t *testing.T) {
	zk, _ := zktest.ForTestTLS(t, false)
	_, err := elect.NewSession(context.Background(), zk.SecureAddrs(), elect.WithConnectTimeout(6*time.Second))
	if err == nil || !strings.Contains(err.Error(), "if it is a secureClientPort, give --zk-tls") {
		t.Fatalf("plain text to the secureClientPort: %v; want the TLS hint", err)
	}
}

// TestReconnectTLSFailureIsLogged: a session that connected, and whose
// reconnects then fail TLS with every member (a CA or certificate changed
// meanwhile), says why in its log, rather than only that the connection
// is suspended and then lost.
func TestReconnectTLSFailureIsLogged(t *testing.T) {
	zk, files := zktest.ForTestTLS(t, false)
	p := proxyTo(t, zk.SecureAddrs()[0])
	var refuse atomic.Bool
	// Once refusing, the server's certificate fails verification as one
	// signed by a CA this client no longer trusts would.
	cfg := &tls.Config{RootCAs: caPool(t, files.CA), VerifyConnection: func(cs tls.ConnectionState) error {
		if refuse.Load() {
			return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates,
				Err: x509.UnknownAuthorityError{Cert: cs.PeerCertificates[0]}}
		}
		return nil
	}}
	var log lockedBuf
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := elect.NewSession(ctx, []string{p.Addr()}, elect.WithTLS(cfg), elect.WithSessionTimeout(4*time.Second),
		elect.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	refuse.Store(true)
	p.Cut()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(log.String(), "cannot reconnect to ZooKeeper: TLS failed with every member"); {
		if time.Now().After(deadline) {
			t.Fatalf("no word of the failed TLS within 10 s; log:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not ordering
	}
	if !strings.Contains(log.String(), "give the CA that signed the server's certificate") {
		t.Fatalf("the log does not say why TLS failed:\n%s", log.String())
	}
}

// lockedBuf is a log destination safe for the session's goroutines.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
