package zktest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/zkherald/herald/internal/testtls"
	"github.com/zkherald/herald/internal/zkserver"
)

// TLSFiles are testtls's PEM files plus the server key and certificate in
// the single file ZooKeeper's PEM key store reads.
type TLSFiles struct {
	testtls.Files
	KeyStore string // for Config.TLSKeyStore
}

// NewTLSFiles writes a fresh CA, server and client certificate into t's
// temp dir.
func NewTLSFiles(t testing.TB) TLSFiles {
	t.Helper()
	dir := t.TempDir()
	files, err := testtls.Generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := TLSFiles{Files: files, KeyStore: filepath.Join(dir, "server-keystore.pem")}
	var ks []byte
	for _, p := range []string{files.ServerKey, files.ServerCert} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, b...)
	}
	if err := os.WriteFile(f.KeyStore, ks, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// ForTestTLS starts a standalone server that also listens for TLS clients
// (Cluster.SecureAddrs) with a certificate from NewTLSFiles. With
// clientCerts, clients must present a certificate the same CA signed.
func ForTestTLS(t testing.TB, clientCerts bool) (*zkserver.Cluster, TLSFiles) {
	t.Helper()
	f := NewTLSFiles(t)
	cfg := zkserver.Config{TLSKeyStore: f.KeyStore}
	if clientCerts {
		cfg.TLSTrustStore = f.CA
	}
	return ForTest(t, cfg), f
}
