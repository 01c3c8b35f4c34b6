package main

import (
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish/bridge"
)

// TestBridgeShardOf: shard-of says which --shard K/N observes each path,
// as the bridges compute it; the values for two paths were computed apart
// from herald (Python's hashlib: the MD5's last 8 bytes, big-endian, mod N).
func TestBridgeShardOf(t *testing.T) {
	paths := []string{"/locks/orders", "/hbase/master"}
	for i := range 20 {
		paths = append(paths, fmt.Sprintf("/services/svc-%d/leader", i))
	}
	out, stderr, code := heraldRun(t, nil, append([]string{"bridge", "shard-of", "--shards", "3"}, paths...)...)
	if code != 0 {
		t.Fatalf("shard-of: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(paths) {
		t.Fatalf("shard-of printed %d lines for %d paths:\n%s", len(lines), len(paths), out)
	}
	for i, p := range paths {
		if want := fmt.Sprintf("%d/3\t%s", bridge.ShardOf(p, 3), p); lines[i] != want {
			t.Errorf("line %d: %q, want %q", i, lines[i], want)
		}
	}
	if lines[0] != "0/3\t/locks/orders" || lines[1] != "2/3\t/hbase/master" {
		t.Errorf("shard-of --shards 3 /locks/orders /hbase/master: %q, %q; want 0/3 and 2/3", lines[0], lines[1])
	}
}

// TestReadyLine: herald bridge check prints the role, the shard and how
// many groups the bridge observes from /readyz's body, and takes nothing
// else for ready: the live page, /healthz and /metrics answer 200 too.
func TestReadyLine(t *testing.T) {
	for body, want := range map[string]string{
		`{"ready":true,"role":"active","shard":"1/4","group_count":5012,"groups":{}}`: "ready: active, shard 1/4, 5012 groups",
		`{"ready":true,"role":"standby","shard":"0/2","group_count":1}`:               "ready: standby, shard 0/2, 1 group",
		`{"ready":true,"role":"active","group_count":0}`:                              "ready: active, all groups, 0 groups",
		`not json`: "",
		"ok\n":     "",
		`<!doctype html><title>herald bridge</title>`:     "",
		`{"ready":false,"role":"active","group_count":0}`: "",
		`{"role":"active","group_count":0}`:               "",
	} {
		got, ok := readyLine([]byte(body))
		if got != want || ok != (want != "") {
			t.Errorf("readyLine(%s) = %q, %v; want %q", body, got, ok, want)
		}
	}
}

// TestReadyzURL: a URL without a path asks /readyz; any path given is
// kept.
func TestReadyzURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:9090":         "http://127.0.0.1:9090/readyz",
		"http://127.0.0.1:9090/":        "http://127.0.0.1:9090/readyz",
		"https://b.example:9090/readyz": "https://b.example:9090/readyz",
		"http://127.0.0.1:9090/metrics": "http://127.0.0.1:9090/metrics",
	} {
		if got, err := readyzURL(in); err != nil || got != want {
			t.Errorf("readyzURL(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"127.0.0.1:9090", "http://", "ftp://x/readyz"} {
		if got, err := readyzURL(in); err == nil {
			t.Errorf("readyzURL(%s) = %q, want an error", in, got)
		}
	}
}

// TestBridgeShardCLI: a bridge run with --shard reports its shard to
// bridge check, and a bridge started beside it at the same --ha with
// another shard count exits 1 naming the count in use and what to do.
func TestBridgeShardCLI(t *testing.T) {
	zk := zkFlags(t)
	url := natsserver.Start(t).URL()
	base, ha := uniq(t), uniq(t)+"-ha"
	var watch []string
	mine := 0
	for i := range 8 {
		g := fmt.Sprintf("%s/g%d", base, i)
		watch = append(watch, "--watch", g)
		if bridge.ShardOf(g, 2) == 0 {
			mine++
		}
	}
	args := append(append([]string{"bridge", "--ha", ha, "--nats", url, "--http", "127.0.0.1:0", "--shard", "0/2"}, watch...), zk...)
	b := start(t, nil, args...)
	addr := waitMatch(t, b, regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`), 30*time.Second)
	waitRole(t, addr, "active")
	want := fmt.Sprintf("ready: active, shard 0/2, %d groups", mine)
	if mine == 1 {
		want = "ready: active, shard 0/2, 1 group"
	}
	if out, stderr, code := heraldRun(t, nil, "bridge", "check", "--url", "http://"+addr+"/readyz"); code != 0 || strings.TrimSpace(out) != want {
		t.Errorf("bridge check on shard 0/2: exit %d, %q; want 0, %q (%s)", code, out, want, stderr)
	}

	other := append(append([]string{"bridge", "--ha", ha, "--nats", url, "--shard", "0/3"}, watch...), zk...)
	_, stderr, code := heraldRun(t, nil, other...)
	if code != exitFailure || !strings.Contains(stderr, "run as shards of 2") || !strings.Contains(stderr, "every bridge of one --ha needs the same N") {
		t.Errorf("bridge --shard 0/3 beside shards of 2: exit %d, want %d naming the count in use and the fix; stderr:\n%s", code, exitFailure, stderr)
	}
	waitRole(t, addr, "active")
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	if code := b.wait(t, 15*time.Second); code != 0 {
		t.Errorf("shard 0/2 bridge: exit %d after SIGTERM", code)
	}
}
