package pemtls

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/testtls"
)

// ClientCert refuses, saying why, a certificate a server would refuse
// with a terse alert: one that expired, or one not meant for client
// authentication (a server's); it takes a valid client certificate.
func TestClientCertRefusesWhatServersRefuse(t *testing.T) {
	f, err := testtls.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ClientCert(f.ClientCert, f.ClientKey); err != nil {
		t.Fatalf("a valid client certificate: %v", err)
	}
	for _, c := range []struct{ name, cert, key, want string }{
		{"expired", f.ExpiredClientCert, f.ExpiredClientKey, "expired at"},
		{"a server's", f.ServerCert, f.ServerKey, "not meant for client authentication"},
	} {
		if _, err := ClientCert(c.cert, c.key); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s certificate: %v; want an error saying %q", c.name, err, c.want)
		}
	}
	if _, err := ClientConfig("", f.ExpiredClientCert, f.ExpiredClientKey); err == nil || !strings.Contains(err.Error(), f.ExpiredClientCert) {
		t.Errorf("ClientConfig with an expired certificate: %v; want an error naming the file", err)
	}
}

// Reloading presents the certificate the files hold at each handshake:
// one renewed in place is presented from the next handshake on, and a
// renewal that does not load yet fails that handshake, saying why.
func TestReloadingFollowsARenewal(t *testing.T) {
	f, err := testtls.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	put := func(from, to string, at time.Time) {
		t.Helper()
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(to, at, at); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	put(f.ClientCert, cert, now)
	put(f.ClientKey, key, now)
	get, err := Reloading(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	subject := func() string {
		t.Helper()
		c, err := get(&tls.CertificateRequestInfo{})
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf.Subject.CommonName
	}
	if cn := subject(); cn != "herald test client" {
		t.Fatalf("presented %q, want the certificate the files hold", cn)
	}
	// Renewed in place: the certificate first, its key a moment later.
	put(f.OtherClientCert, cert, now.Add(time.Second))
	if _, err := get(&tls.CertificateRequestInfo{}); err == nil || !strings.Contains(err.Error(), cert) {
		t.Fatalf("a certificate without its key yet: %v; want an error naming the files", err)
	}
	put(f.OtherClientKey, key, now.Add(time.Second))
	if cn := subject(); cn != "herald other client" {
		t.Fatalf("after the renewal presented %q, want the renewed certificate", cn)
	}
}
