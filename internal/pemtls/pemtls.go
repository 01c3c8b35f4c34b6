// Package pemtls builds client TLS configs from PEM files, the one way
// herald's NATS, Kafka and ZooKeeper connections take CAs and client
// certificates.
package pemtls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

// RootCAs reads the CA certificates in a PEM file.
func RootCAs(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", file)
	}
	return pool, nil
}

// ClientConfig is a TLS 1.2+ client config trusting the CAs in caFile (the
// system's when it is "") and presenting the certificate in certFile with
// keyFile when certFile is given. Errors say which file is wrong.
func ClientConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := RootCAs(caFile)
		if err != nil {
			return nil, fmt.Errorf("TLS CA file: %w", err)
		}
		cfg.RootCAs = pool
	}
	if certFile != "" {
		get, err := Reloading(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("TLS client certificate %s / key %s: %w", certFile, keyFile, err)
		}
		cfg.GetClientCertificate = get
	}
	return cfg, nil
}

// Reloading loads a client certificate (see ClientCert) and returns what
// presents it at each handshake, loaded again whenever either file
// changed: short-lived certificates (cert-manager, Vault, SPIFFE) are
// renewed in place, and a long-running bridge or holder reconnects with
// the renewed one instead of the one it started with, which has expired.
// A renewal that does not load (the certificate written, its key not
// yet) fails that handshake, saying why; the next one loads it again.
func Reloading(certFile, keyFile string) (func(*tls.CertificateRequestInfo) (*tls.Certificate, error), error) {
	r := &reloader{certFile: certFile, keyFile: keyFile}
	if _, err := r.get(); err != nil {
		return nil, err
	}
	return func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		c, err := r.get()
		if err != nil {
			return nil, fmt.Errorf("TLS client certificate %s / key %s: %w", certFile, keyFile, err)
		}
		return c, nil
	}, nil
}

type reloader struct {
	certFile, keyFile string
	mu                sync.Mutex
	stamp             string // the files' sizes and modification times when loaded
	cert              *tls.Certificate
}

func (r *reloader) get() (*tls.Certificate, error) {
	stamp := fileStamp(r.certFile) + "|" + fileStamp(r.keyFile)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cert != nil && stamp == r.stamp {
		return r.cert, nil
	}
	c, err := ClientCert(r.certFile, r.keyFile)
	if err != nil {
		return nil, err
	}
	r.cert, r.stamp = &c, stamp
	return r.cert, nil
}

func fileStamp(p string) string {
	fi, err := os.Stat(p)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d@%d", fi.Size(), fi.ModTime().UnixNano())
}

// ClientCert loads a client certificate and its key, and refuses one that
// a server would refuse anyway, saying why here rather than leaving the
// server's terse alert (or, under TLS 1.3, a connection that only goes
// quiet) to explain it: one that is not valid now, or that its extended
// key usage does not allow for client authentication.
func ClientCert(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return cert, err
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return cert, err
		}
	}
	now := time.Now()
	switch {
	case now.After(leaf.NotAfter):
		return cert, fmt.Errorf("the certificate expired at %s: renew it", leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		return cert, fmt.Errorf("the certificate is valid only from %s: check this host's clock", leaf.NotBefore.UTC().Format(time.RFC3339))
	case len(leaf.ExtKeyUsage) > 0 && !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) && !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageAny):
		return cert, errors.New("the certificate is not meant for client authentication (its extended key usage lacks clientAuth): give a client certificate")
	}
	return cert, nil
}
