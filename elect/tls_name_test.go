package elect

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/testtls"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// namedServerTLS writes a fresh CA and a ZooKeeper key store whose server
// certificate names only dnsNames (no IP address), and returns the key
// store's path and a pool trusting the CA.
func namedServerTLS(t *testing.T, dnsNames ...string) (keyStore string, pool *x509.CertPool) {
	t.Helper()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "herald name test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "herald name test server"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: dnsNames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	ks := append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	keyStore = filepath.Join(t.TempDir(), "keystore.pem")
	if err := os.WriteFile(keyStore, ks, 0o600); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(ca)
	return keyStore, pool
}

// pointNames makes lookupHost resolve each name of names to its
// addresses, and every other name as before, until the test ends.
func pointNames(t *testing.T, names map[string][]string) {
	t.Helper()
	orig := lookupHost
	lookupHost = func(ctx context.Context, host string) ([]string, error) {
		if addrs, ok := names[host]; ok {
			return addrs, nil
		}
		return orig(ctx, host)
	}
	t.Cleanup(func() { lookupHost = orig })
}

func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// TestTLSVerifiesTheNameGiven: the server's certificate is checked against
// the host name the server list gives, not the address it resolves to. A
// certificate that names only localhost is accepted for localhost:PORT and
// refused for 127.0.0.1:PORT (an IP address must be one of the
// certificate's IP addresses); a certificate for localhost and 127.0.0.1
// is refused for another name that resolves to 127.0.0.1.
func TestTLSVerifiesTheNameGiven(t *testing.T) {
	ks, pool := namedServerTLS(t, "localhost")
	zk := zktest.ForTest(t, zkserver.Config{TLSKeyStore: ks})
	port := portOf(t, zk.SecureAddrs()[0])
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	s, err := NewSession(ctx, []string{net.JoinHostPort("localhost", port)}, WithTLS(&tls.Config{RootCAs: pool}), WithConnectTimeout(10*time.Second))
	if err != nil {
		t.Fatalf("localhost:%s with a certificate for DNS:localhost only: %v", port, err)
	}
	_ = s.Close()

	_, err = NewSession(ctx, []string{net.JoinHostPort("127.0.0.1", port)}, WithTLS(&tls.Config{RootCAs: pool}), WithConnectTimeout(5*time.Second))
	if !errors.Is(err, ErrTLS) || !strings.Contains(err.Error(), "does not name the address") {
		t.Errorf("127.0.0.1:%s with a certificate for DNS:localhost only: %v; want ErrTLS saying the certificate does not name the address", port, err)
	}

	// A certificate for localhost and 127.0.0.1, reached by another name.
	both, files := zktest.ForTestTLS(t, false)
	port = portOf(t, both.SecureAddrs()[0])
	pointNames(t, map[string][]string{"zk-elsewhere.test": {"127.0.0.1"}})
	pemCA, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCA)
	began := time.Now()
	_, err = NewSession(ctx, []string{net.JoinHostPort("zk-elsewhere.test", port)}, WithTLS(&tls.Config{RootCAs: pool}), WithConnectTimeout(10*time.Second))
	if !errors.Is(err, ErrTLS) || !strings.Contains(err.Error(), "zk-elsewhere.test") || !strings.Contains(err.Error(), "does not name the address") {
		t.Errorf("zk-elsewhere.test:%s, resolving to 127.0.0.1, with a certificate for localhost and 127.0.0.1: %v; want ErrTLS naming zk-elsewhere.test", port, err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("the refusal took %v; a certificate error is not worth retrying", d)
	}
}

// strangerMemberAt listens at addr as a TLS server whose certificate
// comes from a CA no test trusts (an ensemble member mid-rotation, or
// misconfigured), and returns its address.
func strangerMemberAt(t testing.TB, addr string) string {
	t.Helper()
	f, err := testtls.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(f.ServerCert, f.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", addr, &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_ = c.(*tls.Conn).Handshake()
				_ = c.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

// TestTLSNameWithTwoAddresses: a name that resolves to two addresses is
// two members. One of them failing TLS does not end the session's wait as
// if every member had failed: the other is tried, and answers.
func TestTLSNameWithTwoAddresses(t *testing.T) {
	zk, files := zktest.ForTestTLS(t, false)
	port := portOf(t, zk.SecureAddrs()[0])
	// A member with a certificate from a CA the test does not trust, at
	// the same port on another loopback address (all of 127/8 is
	// loopback on Linux).
	strangerMemberAt(t, net.JoinHostPort("127.0.0.2", port))
	pointNames(t, map[string][]string{"zk-two.test": {"127.0.0.2", "127.0.0.1"}})
	pemCA, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCA)
	// The shuffle puts the stranger first about half the time.
	for i := range 6 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := NewSession(ctx, []string{net.JoinHostPort("zk-two.test", port)}, WithTLS(&tls.Config{RootCAs: pool, ServerName: "localhost"}), WithConnectTimeout(10*time.Second))
		cancel()
		if err != nil {
			t.Fatalf("session %d by a name whose first or second address fails TLS: %v", i, err)
		}
		_ = s.Close()
	}
}

// TestTLSStrangerBesideASlowMember: a member whose certificate is not
// trusted beside a good member too slow to finish its TLS handshake
// within the dial timeout (a loaded server; here one behind a partition
// that heals after 1.5 s). The client comes round to the stranger again
// while the good member is still slow; that is no proof that every member
// fails TLS, and the session waits for the good one. It gave up with
// ErrTLS after a second, about half the time (when the shuffle put the
// stranger first).
func TestTLSStrangerBesideASlowMember(t *testing.T) {
	zk, files := zktest.ForTestTLS(t, false)
	stranger := strangerMemberAt(t, "127.0.0.1:0")
	slow, err := faultproxy.New(zk.SecureAddrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = slow.Close() })
	pemCA, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCA)
	for i := range 4 {
		slow.Blackhole(true)
		heal := time.AfterFunc(1500*time.Millisecond, func() { slow.Blackhole(false) })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := NewSession(ctx, []string{stranger, slow.Addr()}, WithTLS(&tls.Config{RootCAs: pool, ServerName: "localhost"}), WithConnectTimeout(10*time.Second))
		cancel()
		heal.Stop()
		slow.Blackhole(false)
		if err != nil {
			t.Fatalf("session %d beside a member that fails TLS and one slow to answer: %v", i, err)
		}
		_ = s.Close()
	}
}
