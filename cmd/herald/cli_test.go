package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUnknownSubcommandAndFlagExit2(t *testing.T) {
	for _, args := range [][]string{
		{"frobnicate"},
		{"--no-such-flag"},
		{"who", "--no-such-flag", "/x"},
		{"run", "--election", "/x", "--bogus", "--", "true"},
	} {
		_, stderr, code := heraldRun(t, nil, args...)
		if code != exitUsage {
			t.Errorf("herald %v: exit %d, want %d; stderr: %s", args, code, exitUsage, stderr)
		}
		if !strings.Contains(stderr, "--help") {
			t.Errorf("herald %v: stderr does not point to --help: %s", args, stderr)
		}
	}
}

func TestEveryCommandHelpShowsAnExample(t *testing.T) {
	for _, c := range [][]string{{"run"}, {"lock"}, {"who"}, {"tail"}, {"history"}, {"demo"}, {"checkpoint"}, {"checkpoint", "put"}, {"checkpoint", "get"}} {
		stdout, stderr, code := heraldRun(t, nil, append(c, "--help")...)
		if code != 0 || !strings.Contains(stdout, "Examples:") || !strings.Contains(stdout, "herald "+strings.Join(c, " ")) {
			t.Errorf("herald %v --help: exit %d, no example in:\n%s%s", c, code, stdout, stderr)
		}
	}
}

func TestMalformedPathsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"who", "jobs/nightly"},
		{"who", "/jobs//nightly"},
		{"run", "--election", "/jobs/", "--", "true"},
		{"lock", "--lock", "relative", "--", "true"},
		{"history", "/a/../b", "--audit", "x"},
		{"tail", "no-slash", "--nats", "nats://127.0.0.1:1"},
		{"checkpoint", "get", "--election", "x"},
	} {
		_, stderr, code := heraldRun(t, nil, args...)
		if code != exitUsage || !strings.Contains(stderr, "ZooKeeper path") {
			t.Errorf("herald %v: exit %d, want 2 with a path error; stderr: %s", args, code, stderr)
		}
	}
}

func TestMissingRequiredInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--", "true"}, "--election is required"},
		{[]string{"run", "--election", "/x"}, "no command given"},
		{[]string{"lock", "--", "true"}, "--lock is required"},
		{[]string{"checkpoint", "put", "x"}, "herald run"},
		{[]string{"tail"}, "--nats"},
		{[]string{"history"}, "--audit"},
		{[]string{"who", "/x", "--nats", "nats://a:1", "--kafka", "b:1"}, "not both"},
		{[]string{"lock", "--lock", "/x", "--dialect", "zookeeper", "--", "true"}, "curator-lock, curator-latch, kazoo"},
		{[]string{"run", "--election", "/x", "--dialect", "Kazoo", "--", "true"}, "unknown dialect"},
	} {
		_, stderr, code := heraldRun(t, nil, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("herald %v: exit %d, want 2 saying %q; stderr: %s", tc.args, code, tc.want, stderr)
		}
	}
}

func TestChildThatCannotStart(t *testing.T) {
	_, stderr, code := heraldRun(t, nil, "run", "--election", "/x", "--", "/no/such/command")
	if code != exitNotFound || !strings.Contains(stderr, "/no/such/command") {
		t.Errorf("missing command: exit %d, want %d naming it; stderr: %s", code, exitNotFound, stderr)
	}
	plain := filepath.Join(t.TempDir(), "not-executable")
	if err := os.WriteFile(plain, []byte("echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = heraldRun(t, nil, "lock", "--lock", "/x", "--", plain)
	if code != exitCannotExec {
		t.Errorf("non-executable command: exit %d, want %d; stderr: %s", code, exitCannotExec, stderr)
	}
}

func TestUnreachableZooKeeperNamesTheServers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	_, stderr, code := heraldRun(t, nil, "--zk", addr, "--connect-timeout", "500ms", "who", "/x")
	if code != exitFailure || !strings.Contains(stderr, addr) || !strings.Contains(stderr, "unreachable") {
		t.Errorf("exit %d, want 1 naming %s as unreachable; stderr: %s", code, addr, stderr)
	}
}

func TestEnvironmentSetsFlags(t *testing.T) {
	_, stderr, code := heraldRun(t, []string{"HERALD_LOG_LEVEL=loud"}, "who", "/x")
	if code != exitUsage || !strings.Contains(stderr, "HERALD_LOG_LEVEL") && !strings.Contains(stderr, "loud") {
		t.Errorf("bad HERALD_LOG_LEVEL: exit %d, stderr: %s", code, stderr)
	}
}
