package elect_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestSessionOverTLS runs an election over ZooKeeper's secureClientPort,
// and checks that an untrusted certificate and a plain-text port fail with
// errors that say so.
func TestSessionOverTLS(t *testing.T) {
	zk, files := zktest.ForTestTLS(t, false)
	pemCA, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCA) {
		t.Fatal("test CA does not parse")
	}
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
