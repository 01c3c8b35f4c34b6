// Package pemtls builds client TLS configs from PEM files, the one way
// herald's NATS, Kafka and ZooKeeper connections take CAs and client
// certificates.
package pemtls

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
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
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("TLS client certificate %s / key %s: %w", certFile, keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
