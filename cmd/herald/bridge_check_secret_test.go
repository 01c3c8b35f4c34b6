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
