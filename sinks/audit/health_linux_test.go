package audit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/sinks/sinktest"
)

// TestConnectedWithoutWritePermission: for a user other than root, a
// directory without write permission (chmod 0500) reads not connected,
// though appends to the open log still succeed: the next rotation would
// fail. Root writes regardless of the mode bits, so as root the test runs
// itself again as nobody (uid 65534).
func TestConnectedWithoutWritePermission(t *testing.T) {
	if os.Geteuid() == 0 {
		asNobody(t, "TestConnectedWithoutWritePermission")
		return
	}
	dir := filepath.Join(t.TempDir(), "log")
	s := open(t, filepath.Join(dir, "audit.log"), ProbeInterval(probeEvery))
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, dirMode) })
	waitUntil(t, 10*time.Second, "not connected with the directory read-only", func() bool { return !s.Connected() })
	write(t, s, sinktest.Events("chmod", 1, 1))
	if s.Connected() {
		t.Error("a write to the open log made the sink say connected; the directory still takes no file")
	}
	if err := os.Chmod(dir, dirMode); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "connected with the directory writable again", s.Connected)
}

// asNobody runs test in a copy of this test binary as uid and gid 65534,
// with a temporary directory that user may write, and fails unless it
// passes there.
func asNobody(t *testing.T, test string) {
	t.Helper()
	if os.Getenv("HERALD_AUDIT_TEST_AS_NOBODY") != "" {
		t.Fatal("still root after switching to uid 65534")
	}
	dir, err := os.MkdirTemp("", "audit-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin, tmp := filepath.Join(dir, "audit.test"), filepath.Join(dir, "tmp")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, tmp} {
		if err := os.Chmod(p, 0o777); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "HERALD_AUDIT_TEST_AS_NOBODY=1", "TMPDIR="+tmp, "HOME="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+test) {
		t.Fatalf("%s as uid 65534: %v\n%s", test, err, out)
	}
}
