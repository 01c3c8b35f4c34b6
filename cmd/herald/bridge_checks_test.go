package main

import (
	"strings"
	"testing"
	"time"
)

// TestBridgeBadAddressesAreUsageErrors: a --kafka or --nats address that
// is not one is a usage error at once (exit 2, naming it), not retried as
// a server that does not answer until --connect-timeout (exit 69); good
// ones pass the check.
func TestBridgeBadAddressesAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--kafka", "127.0.0.1:abc"},
		{"--kafka", "k1:9092,:9092"},
		{"--nats", "nats//127.0.0.1:4222"},
		{"--nats", "http://127.0.0.1:4222"},
		{"--nats", "nats://127.0.0.1:99999"},
	} {
		start := time.Now()
		all := append([]string{"bridge", "--zk", "127.0.0.1:1", "--connect-timeout", "5s", "--watch", "/g"}, args...)
		_, stderr, code := heraldRun(t, nil, all...)
		if code != exitUsage || !strings.Contains(stderr, args[0]) || time.Since(start) > 3*time.Second {
			t.Errorf("bridge %v: exit %d after %v: %s; want 2 at once, naming the flag", args, code, time.Since(start).Round(time.Millisecond), stderr)
		}
	}
	for _, ok := range []string{"nats://127.0.0.1:4222", "127.0.0.1:4222", "tls://u:p@n1:4222,nats://n2", "nats://[::1]:4222", "wss://n1:443/nats"} {
		f := bridgeFlags{nats: ok, natsMode: "jetstream", haReplay: time.Minute}
		if err := f.checkSinkFlags(); err != nil {
			t.Errorf("--nats %s: %v", ok, err)
		}
	}
	for _, ok := range []string{"k1:9092", "k1,k2:9093", "[::1]:9092"} {
		f := bridgeFlags{kafka: ok, natsMode: "jetstream", haReplay: time.Minute}
		if err := f.checkSinkFlags(); err != nil {
			t.Errorf("--kafka %s: %v", ok, err)
		}
	}
}

// TestHAReplayWithinTheDuplicateWindow: with --ha and JetStream, an
// --ha-replay longer than the stream's duplicate window is refused: a
// takeover would store the older held events again as new ones.
func TestHAReplayWithinTheDuplicateWindow(t *testing.T) {
	for _, tc := range []struct {
		f    bridgeFlags
		fail bool
	}{
		{bridgeFlags{ha: "/ha", nats: "n:4222", natsMode: "jetstream", haReplay: 10 * time.Minute}, true},
		{bridgeFlags{ha: "/ha", natsMode: "jetstream", haReplay: 3 * time.Minute}, true}, // embedded NATS
		{bridgeFlags{ha: "/ha", nats: "n:4222", natsMode: "jetstream", haReplay: 10 * time.Minute, natsDuplicates: 10 * time.Minute}, false},
		{bridgeFlags{ha: "/ha", nats: "n:4222", natsMode: "jetstream", haReplay: 2 * time.Minute}, false},
		{bridgeFlags{ha: "/ha", nats: "n:4222", natsMode: "core", haReplay: 10 * time.Minute}, false},
		{bridgeFlags{ha: "/ha", kafka: "k:9092", natsMode: "jetstream", haReplay: 10 * time.Minute}, false},
		{bridgeFlags{nats: "n:4222", natsMode: "jetstream", haReplay: 10 * time.Minute}, false}, // no HA
	} {
		err := tc.f.checkSinkFlags()
		if (err != nil) != tc.fail || err != nil && !strings.Contains(err.Error(), "--nats-duplicates") {
			t.Errorf("%+v: %v; want refused: %v", tc.f, err, tc.fail)
		}
	}
	_, stderr, code := heraldRun(t, nil, "bridge", "--zk", "127.0.0.1:1", "--watch", "/g", "--nats", "n:4222", "--ha", "/ha", "--ha-replay", "10m")
	if code != exitUsage || !strings.Contains(stderr, "--ha-replay 10m0s is longer than the stream's duplicate window") {
		t.Errorf("bridge --ha-replay 10m: exit %d: %s", code, stderr)
	}
}
