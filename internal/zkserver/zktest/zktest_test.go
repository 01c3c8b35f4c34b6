package zktest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

func TestMain(m *testing.M) { zktest.Main(m) }

func TestSharedServesEveryCaller(t *testing.T) {
	a, b := zktest.Shared(t), zktest.Shared(t)
	if a != b {
		t.Fatal("Shared started a second server")
	}
	if !a.Member(0).Running() {
		t.Fatal("shared server is not running")
	}
}

// A missing ZooKeeper skips the test unless HERALD_REQUIRE_SERVERS=1.
func TestMissingZooKeeperSkips(t *testing.T) {
	t.Setenv(zktest.RequireEnv, "")
	t.Setenv("ZOOKEEPER_HOME", t.TempDir())
	var skipped bool
	t.Run("inner", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		zktest.ForTest(t, zkserver.Config{})
	})
	if !skipped {
		t.Fatal("ForTest did not skip without ZooKeeper")
	}
}

// With HERALD_REQUIRE_SERVERS=1 the same situation fails the test with the
// install hint. It runs in a child process so the failure stays there.
func TestMissingZooKeeperFailsWhenRequired(t *testing.T) {
	if os.Getenv("ZKTEST_CHILD") == "1" {
		zktest.ForTest(t, zkserver.Config{})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMissingZooKeeperFailsWhenRequired$", "-test.v")
	cmd.Env = append(os.Environ(), "ZKTEST_CHILD=1", zktest.RequireEnv+"=1", "ZOOKEEPER_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("child passed; want a failure:\n%s", out)
	}
	if !strings.Contains(string(out), "--- FAIL") || !strings.Contains(string(out), "apt-get install -y zookeeper") {
		t.Fatalf("child output lacks the failure and install hint:\n%s", out)
	}
}
