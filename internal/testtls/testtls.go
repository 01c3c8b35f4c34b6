// Package testtls makes throwaway PEM certificates for tests that run real
// servers over TLS (NATS, Kafka, ZooKeeper).
package testtls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files names PEM files made by Generate: a certificate authority, a
// server certificate for 127.0.0.1 and localhost, and two client
// certificates with different subjects (CN "herald test client" and
// "herald other client"), all signed by the CA.
type Files struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
	OtherClientCert, OtherClientKey                  string
	// ExpiredClientCert is a client certificate the CA signed that
	// expired an hour ago.
	ExpiredClientCert, ExpiredClientKey string
}

// Generate writes a fresh self-signed CA and certificates into dir. They
// are valid for one day.
func Generate(dir string) (Files, error) {
	f := Files{
		CA:         filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server-cert.pem"),
		ServerKey:  filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client-cert.pem"),
		ClientKey:  filepath.Join(dir, "client-key.pem"),

		OtherClientCert: filepath.Join(dir, "other-client-cert.pem"),
		OtherClientKey:  filepath.Join(dir, "other-client-key.pem"),

		ExpiredClientCert: filepath.Join(dir, "expired-client-cert.pem"),
		ExpiredClientKey:  filepath.Join(dir, "expired-client-key.pem"),
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, fmt.Errorf("testtls: generate CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "herald test CA"},
		NotBefore:             now.Add(-3 * time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return f, fmt.Errorf("testtls: self-sign CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return f, fmt.Errorf("testtls: parse CA: %w", err)
	}
	if err := writePEM(f.CA, "CERTIFICATE", caDER); err != nil {
		return f, err
	}
	notAfter := now.Add(24 * time.Hour)
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage, certFile, keyFile string) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return fmt.Errorf("testtls: generate %s key: %w", name, err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    now.Add(-2 * time.Hour),
			NotAfter:     notAfter,
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			DNSNames:     []string{"localhost"},
			IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return fmt.Errorf("testtls: sign %s certificate: %w", name, err)
		}
		kder, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return fmt.Errorf("testtls: encode %s key: %w", name, err)
		}
		if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
			return err
		}
		return writePEM(keyFile, "PRIVATE KEY", kder)
	}
	if err := leaf(2, "herald test server", x509.ExtKeyUsageServerAuth, f.ServerCert, f.ServerKey); err != nil {
		return f, err
	}
	if err := leaf(3, "herald test client", x509.ExtKeyUsageClientAuth, f.ClientCert, f.ClientKey); err != nil {
		return f, err
	}
	if err := leaf(4, "herald other client", x509.ExtKeyUsageClientAuth, f.OtherClientCert, f.OtherClientKey); err != nil {
		return f, err
	}
	notAfter = now.Add(-time.Hour)
	if err := leaf(5, "herald expired client", x509.ExtKeyUsageClientAuth, f.ExpiredClientCert, f.ExpiredClientKey); err != nil {
		return f, err
	}
	return f, nil
}

func writePEM(path, typ string, der []byte) error {
	b := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("testtls: write %s: %w", path, err)
	}
	return nil
}
