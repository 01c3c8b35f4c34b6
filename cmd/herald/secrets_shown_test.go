package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/natsserver"
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

// TestSecretFromTheEnvironmentIsTidied: HERALD_KAFKA_PASSWORD or
// HERALD_NATS_TOKEN from a secret store that ends values with a line
// break was sent with it: SCRAM refused it with an error that quoted the
// password, and NATS refused the token. Both log in now, as their file
// twins and HERALD_ZK_AUTH do; a tab inside a SCRAM password (legal in a
// file) is a usage error that does not show it.
func TestSecretFromTheEnvironmentIsTidied(t *testing.T) {
	k := kafkatest.Start(t, kafkatest.SASL(kafkatest.ScramSHA512, "alice", "wonder-secret"))
	args := []string{"history", "/x", "--kafka", strings.Join(k.Addrs(), ","), "--kafka-sasl", "SCRAM-SHA-512", "--kafka-user", "alice"}
	out, stderr, code := heraldRun(t, []string{"HERALD_KAFKA_PASSWORD=wonder-secret\n"}, args...)
	if !strings.Contains(stderr, "topic problem") || strings.Contains(out+stderr, "der-secret") {
		t.Errorf("HERALD_KAFKA_PASSWORD ending in a line break: exit %d: %s%s\nwant logged in (the topic missing), the password never shown", code, out, stderr)
	}
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("won\tder-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = heraldRun(t, nil, append(args, "--kafka-password-file", pw)...)
	if code != exitUsage || strings.Contains(out+stderr, "der-secret") {
		t.Errorf("--kafka-password-file with a tab: exit %d: %s%s\nwant exit %d, the password never shown", code, out, stderr, exitUsage)
	}
	srv := natsserver.Start(t, natsserver.WithToken("tok-from-env"))
	out, stderr, code = heraldRun(t, []string{"HERALD_NATS_TOKEN=tok-from-env\n"}, "who", "/x", "--nats", srv.URL())
	if strings.Contains(stderr, "Authorization") || !strings.Contains(stderr, "bucket") || strings.Contains(out+stderr, "tok-from-env") {
		t.Errorf("HERALD_NATS_TOKEN ending in a line break: exit %d: %s%s\nwant logged in (the bucket missing)", code, out, stderr)
	}
}

// TestUnparseableNATSURLIsAUsageError: a --nats URL that does not parse
// (a '%' in a password not written %25, a bad port) was retried as a
// server not reachable yet, each message quoting the password; it is a
// usage error at once, on the bridge as on the readers.
func TestUnparseableNATSURLIsAUsageError(t *testing.T) {
	for _, args := range [][]string{
		{"bridge", "--watch", "/a", "--zk", "127.0.0.1:1", "--connect-timeout", "3s", "--audit", filepath.Join(t.TempDir(), "audit.log"), "--nats", "nats://u:Pa%zzw0rd@127.0.0.1:4222"},
		{"who", "/x", "--nats", "nats://u:Pa55w0rd@127.0.0.1:notaport"},
	} {
		out, stderr, code := heraldRun(t, nil, args...)
		if code != exitUsage || strings.Contains(out+stderr, "w0rd") || !strings.Contains(stderr, "does not parse") {
			t.Errorf("herald %v: exit %d: %s%s\nwant exit %d saying it does not parse, the password never shown", args, code, out, stderr, exitUsage)
		}
	}
}
