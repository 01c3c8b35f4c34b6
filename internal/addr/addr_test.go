package addr

import (
	"strings"
	"testing"
)

func TestNATS(t *testing.T) {
	for _, ok := range []string{"nats://127.0.0.1:4222", "127.0.0.1:4222", "tls://u:p@n1:4222", "n2", "nats://[::1]:4222", "wss://n1:443/nats", "nats://u:p%25w@h:1"} {
		if err := NATS(ok); err != nil {
			t.Errorf("NATS(%q) = %v; want nil", ok, err)
		}
	}
	for _, tc := range []struct{ url, want string }{
		{"nats//127.0.0.1:4222", "want nats://host:port"},
		{"http://127.0.0.1:4222", `scheme "http"`},
		{"nats://127.0.0.1:99999", "not a port number"},
		{"nats://127.0.0.1:4222/x", "want nats://host:port"},
		{"nats://:4222", "no host"},
		{"nats://u:Pa%zzw0rd@127.0.0.1:4222", "does not parse"},
		{"u:Pa55w0rd@127.0.0.1:notaport", "does not parse"},
	} {
		err := NATS(tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NATS(%q) = %v; want an error saying %q", tc.url, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "w0rd") {
			t.Errorf("NATS(%q) quotes the password: %v", tc.url, err)
		}
	}
}

func TestHostPort(t *testing.T) {
	for _, ok := range []string{"k1:9092", "k1", "[::1]:9092", "[::1]"} {
		if err := HostPort(ok); err != nil {
			t.Errorf("HostPort(%q) = %v; want nil", ok, err)
		}
	}
	for _, bad := range []string{":9092", "k1:abc", "k1:0", "k1:65536", "a:b:c"} {
		if err := HostPort(bad); err == nil {
			t.Errorf("HostPort(%q) = nil; want an error", bad)
		}
	}
}
