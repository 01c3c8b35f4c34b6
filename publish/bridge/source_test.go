package bridge_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/audit"
)

// A --source that is not a URI-reference would make every event an invalid
// CloudEvent: Validate refuses it, saying what is wrong and what to give.
func TestConfigValidateSource(t *testing.T) {
	sink, err := audit.New(t.TempDir() + "/a.log")
	if err != nil {
		t.Fatal(err)
	}
	base := bridge.Config{Servers: []string{"zk:2181"}, Watch: []string{"/a"}, Sinks: []publish.Sink{sink}}
	for _, ok := range []string{"", "herald-bridge@host-1", "bridge%20a", "https://example.com/bridges/a",
		publish.Source("herald-bridge@", "odd host[1]")} {
		c := base
		c.Source = ok
		if err := c.Validate(); err != nil {
			t.Errorf("source %q: %v", ok, err)
		}
	}
	for _, bad := range []string{"bridge a", "http://[bad", "100%", "a#b#c", "héte"} {
		c := base
		c.Source = bad
		err := c.Validate()
		if !errors.Is(err, bridge.ErrConfig) {
			t.Errorf("source %q: got %v, want ErrConfig", bad, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "--source") || !strings.Contains(msg, "URI-reference") {
			t.Errorf("source %q: %q does not name the flag and what to give", bad, msg)
		}
	}
}
