//go:build linux

package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestScriptWhoseInterpreterIsMissing: a script that exists and is
// executable but whose #! line names an interpreter that does not exist is
// refused before any campaign, naming the interpreter (the kernel's ENOENT
// read as "no such file", as if the script were missing), exit 127 as a
// shell gives.
func TestScriptWhoseInterpreterIsMissing(t *testing.T) {
	dir := t.TempDir()
	script := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := script("job.sh", "#! /no/such/interpreter -e\necho hi\n")
	dos := script("dos.sh", "#!/bin/sh\r\necho hi\r\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--election", "/x", "--", bad}, `the interpreter its #! line names, "/no/such/interpreter", does not exist`},
		{[]string{"lock", "--lock", "/x", "--", bad}, `"/no/such/interpreter"`},
		{[]string{"run", "--election", "/x", "--", dos}, "DOS line endings"},
	} {
		// No ZooKeeper there: refused before connecting.
		_, stderr, code := heraldRun(t, nil, append([]string{"--zk", "127.0.0.1:1", "--connect-timeout", "1s"}, tc.args...)...)
		if code != exitNotFound || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, filepath.Base(tc.args[len(tc.args)-1])) {
			t.Errorf("herald %v: exit %d, want %d saying %q; stderr: %s", tc.args, code, exitNotFound, tc.want, stderr)
		}
	}

	// The interpreter gone between the check and the start: the start
	// (startChild, not called here: it makes the test a subreaper) says
	// the same of the exec's ENOENT.
	start := exec.Command(bad).Start()
	err := cannotStart(bad, bad, start)
	var ee *exitError
	if !errors.Is(start, fs.ErrNotExist) || !errors.As(err, &ee) || ee.code != exitNotFound || !strings.Contains(err.Error(), `"/no/such/interpreter", does not exist`) {
		t.Errorf("exec of a script whose interpreter is missing (%v): %v", start, err)
	}
	// A script whose interpreter is there passes the check.
	if err := checkCommand([]string{script("ok.sh", "#!/bin/sh\nexit 0\n")}); err != nil {
		t.Errorf("a script run by /bin/sh: %v", err)
	}
}

// TestScriptWithoutAnInterpreterLine: an executable text file without a
// #! line, which the exec refuses (ENOEXEC) where a shell runs it with sh,
// is refused before any campaign, exit 126, saying to add the line or run
// it with sh. Before, the candidate campaigned, won, and failed with a
// bare "exec format error", every time it was first in line. A file that
// is not executable says to chmod +x it.
func TestScriptWithoutAnInterpreterLine(t *testing.T) {
	dir := t.TempDir()
	nosb, noexec := filepath.Join(dir, "job.sh"), filepath.Join(dir, "plain.sh")
	if os.WriteFile(nosb, []byte("echo hi\n"), 0o755) != nil || os.WriteFile(noexec, []byte("#!/bin/sh\necho hi\n"), 0o644) != nil {
		t.Fatal("cannot write the scripts")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--election", "/x", "--", nosb}, "no #! line"},
		{[]string{"lock", "--lock", "/x", "--", nosb}, "sh " + nosb},
		{[]string{"run", "--election", "/x", "--", noexec}, "chmod +x " + noexec},
	} {
		// No ZooKeeper there: refused before connecting.
		_, stderr, code := heraldRun(t, nil, append([]string{"--zk", "127.0.0.1:1", "--connect-timeout", "1s"}, tc.args...)...)
		if code != exitCannotExec || !strings.Contains(stderr, tc.want) {
			t.Errorf("herald %v: exit %d, want %d saying %q; stderr: %s", tc.args, code, exitCannotExec, tc.want, stderr)
		}
	}
}
