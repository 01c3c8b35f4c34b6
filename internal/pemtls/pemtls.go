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
		cert, err := ClientCert(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("TLS client certificate %s / key %s: %w", certFile, keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
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
