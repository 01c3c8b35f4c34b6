package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestCheckpointOverTheServersLimitSaysSo: a checkpoint within herald's
// 512 KiB but over the servers' jute.maxbuffer (lowered here; 1 MB unless
// set) makes ZooKeeper close the connection, unanswered, each time it is
// sent. checkpoint put took that for a network failure: it sent it eight
// times, then exited 69 ("try again", which never helps) saying the
// connection kept being lost and that the checkpoint may or may not have
// been saved (found by an adversarial test). It now exits 1 saying why,
// and the checkpoint saved before is still the one read back.
func TestCheckpointOverTheServersLimitSaysSo(t *testing.T) {
	zkc := zktest.ForTest(t, zkserver.Config{Nodes: 1, JVMFlags: []string{"-Djute.maxbuffer=100000"}})
	zkFl := []string{"--zk", zkc.ConnectString(), "--session-timeout", "4s", "--connect-timeout", "10s"}
	g := uniq(t)
	child := `"$HERALD_BIN" checkpoint put step=1 || exit 9
		head -c 200000 /dev/zero | tr '\0' a | "$HERALD_BIN" checkpoint put -; echo "big=$?"
		echo "now=[$("$HERALD_BIN" checkpoint get)]"`
	p := start(t, nil, append(zkFl, "run", "--election", g, "--id", "leader", "--", "sh", "-c", child)...)
	if code := p.wait(t, 120*time.Second); code != 0 {
		t.Fatalf("herald run exited %d, want 0:\n%s", code, p.out)
	}
	out := p.out.String()
	if m := regexp.MustCompile(`big=(\d+)`).FindStringSubmatch(out); m == nil || m[1] != "1" {
		t.Errorf("the put over the servers' limit: %v, want big=1 (not 69, try again):\n%s", m, out)
	}
	if !strings.Contains(out, "jute.maxbuffer") || strings.Contains(out, "may or may not have been saved") {
		t.Errorf("the put over the servers' limit did not name jute.maxbuffer, or said it may have been saved:\n%s", out)
	}
	if !strings.Contains(out, "now=[step=1]") {
		t.Errorf("the checkpoint saved before is not the one read back:\n%s", out)
	}
}
