package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestBridgeCheckHidesTheURLsPassword: a bridge behind a proxy with basic
// auth is checked with the password in --url, and the check's output
// lands in the container's health log. It printed the password in every
// message; now none does.
func TestBridgeCheckHidesTheURLsPassword(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) }))
	defer page.Close()
	host := strings.TrimPrefix(page.URL, "http://")
	for _, url := range []string{
		"http://admin:Sup3rSecret@127.0.0.1:1/readyz",   // nothing listens
		"http://admin:Sup3rSecret@" + host + "/metrics", // 200, not /readyz
		"ftp://admin:Sup3rSecret@127.0.0.1:1/readyz",    // not http
		"http://admin:Sup3rSecret@127.0.0.1:%zz/readyz", // does not parse
	} {
		out, stderr, code := heraldRun(t, nil, "bridge", "check", "--url", url, "--timeout", "2s")
		if code == 0 || strings.Contains(out+stderr, "Sup3rSecret") || !strings.Contains(stderr, "127.0.0.1") {
			t.Errorf("bridge check --url %s: exit %d, output:\n%s%s\nwant a failure that names the host, never the password", url, code, out, stderr)
		}
	}
}

// TestHalfGivenKafkaCredentialsAreRefused: --kafka-password without
// --kafka-user was dropped without a word (herald connected without
// SASL), and a user without a password sent an empty one, which the
// brokers refused far from the cause. Both are usage errors, as the NATS
// flags' are.
func TestHalfGivenKafkaCredentialsAreRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--kafka-password", "Sup3rSecret"},
		{"--kafka-user", "alice"},
		{"--kafka-user", "alice", "--kafka-sasl", "SCRAM-SHA-512", "--kafka-password", "Sup3r\tSecret"},
	} {
		out, stderr, code := heraldRun(t, nil, append([]string{"who", "/x", "--kafka", "127.0.0.1:9"}, args...)...)
		if code != exitUsage || strings.Contains(out+stderr, "Sup3r") {
			t.Errorf("who --kafka %v: exit %d, output:\n%s%s\nwant exit %d, the password never shown", args, code, out, stderr, exitUsage)
		}
	}
}
