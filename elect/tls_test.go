package elect_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

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
