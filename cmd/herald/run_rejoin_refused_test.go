package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunRejoinCredentialsChanged: a deposed runner with --rejoin whose
// auth file now holds other credentials, which the group's ACL refuses
// when it campaigns again, exits 3 as when the file is gone, naming what
// it lost, that it could not campaign again and the credentials to look
// at; not 1, as if something else had failed.
func TestRunRejoinCredentialsChanged(t *testing.T) {
	zk := zkFlags(t)
	openTestRoot(t)
	g := uniq(t)
	dir := t.TempDir()
	authA, authB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, f := range []string{authA, authB} {
		if err := os.WriteFile(f, []byte("herald:s3cret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	child := `echo "$HERALD_ID running"; while :; do sleep 0.05; done`
	a := start(t, nil, append(zk, "--zk-auth-file", authA, "run", "--election", g, "--id", "a", "--grace", "2s", "--rejoin", "--", "sh", "-c", child)...)
	a.waitOutput(t, "a running", 20*time.Second)
	b := start(t, nil, append(zk, "--zk-auth-file", authB, "run", "--election", g, "--id", "b", "--grace", "2s", "--", "sh", "-c", child)...)
	waitQueued(t, zk, g, 2, "b never joined the queue")
	if err := os.WriteFile(authA, []byte("someone:else\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(a.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	b.waitOutput(t, "b running", 20*time.Second)
	if err := syscall.Kill(a.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if code := a.wait(t, 20*time.Second); code != exitNotLeader {
		t.Fatalf("a exited %d, want %d:\n%s", code, exitNotLeader, a.out)
	}
	for _, want := range []string{"could not campaign again", "not allowed to create nodes", "--zk-auth-file"} {
		if !strings.Contains(a.out.String(), want) {
			t.Errorf("a's output does not say %q:\n%s", want, a.out)
		}
	}
}
