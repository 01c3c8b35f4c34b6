//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHeldCommandStartsOnlyWhenTold: run and lock start the command held
// by herald's gate, and let it go once the watchdog runs. Held, it has
// started nothing; should the runner die then (its end of the pipe closes
// without a word, and the kernel kills the held process too), nothing is
// ever started. Before, the command ran from the start, and a runner killed
// before its watchdog started left whatever the command forked meanwhile.
func TestHeldCommandStartsOnlyWhenTold(t *testing.T) {
	marks := filepath.Join(t.TempDir(), "marks")
	read := func() string { b, _ := os.ReadFile(marks); return string(b) }
	start := func() (*exec.Cmd, *os.File) {
		t.Helper()
		path, err := exec.LookPath("sh")
		if err != nil {
			t.Fatal(err)
		}
		cmd, held, gate := gatedBy(heraldBin, path, []string{"sh", "-c", `echo "start $$" >> "$MARKS"; exec sleep 30`})
		if gate == nil {
			t.Fatal("no gate")
		}
		cmd.Env = append(os.Environ(), "MARKS="+marks)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		held.Close()
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, gate
	}
	t.Run("runner gone", func(t *testing.T) {
		cmd, gate := start()
		time.Sleep(300 * time.Millisecond)
		if m := read(); m != "" {
			t.Fatalf("the held command started before it was told: %q", m)
		}
		gate.Close() // as the runner's death does
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the held process outlived its runner's end of the pipe")
		}
		if m := read(); m != "" {
			t.Errorf("a command started after its runner was gone: %q", m)
		}
	})
	t.Run("told", func(t *testing.T) {
		cmd, gate := start()
		if _, err := gate.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
		gate.Close()
		if err := waitFor(5*time.Second, func() bool { return strings.Contains(read(), "start ") }); err != nil {
			t.Fatalf("the command never started once told: %q", read())
		}
		// It became the held process: same pid, so the watchdog, which
		// joined that process's group, watches the command itself.
		if want := "start " + itoa(cmd.Process.Pid) + "\n"; read() != want {
			t.Errorf("marks %q, want %q", read(), want)
		}
	})
}
