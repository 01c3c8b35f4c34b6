//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestHistoryFileHonoursTheUmask: a new --html or --svg file gets 0666
// less herald's umask, as a shell's redirect would make it. It was chmodded
// to 0644 whatever the umask, so a user who keeps files private (umask
// 077) wrote a page of every owner's name, host and term that everyone on
// the host could read. A file replaced keeps its mode, whatever the umask.
func TestHistoryFileHonoursTheUmask(t *testing.T) {
	log := timelineLog(t)
	dir := t.TempDir()
	page, svg, kept := filepath.Join(dir, "t.html"), filepath.Join(dir, "t.svg"), filepath.Join(dir, "kept.svg")
	if err := os.WriteFile(kept, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(kept, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		umask, file string
		want        os.FileMode
	}{
		{"077", page, 0o600},
		{"027", svg, 0o640},
		{"077", kept, 0o644},
	} {
		out, err := exec.Command("sh", "-c", `umask `+c.umask+` && exec "$0" "$@"`, heraldBin, "history", "--audit", log, flagFor(c.file), c.file).CombinedOutput()
		if err != nil {
			t.Fatalf("history under umask %s: %v\n%s", c.umask, err, out)
		}
		if fi, err := os.Stat(c.file); err != nil || fi.Mode().Perm() != c.want {
			t.Errorf("%s written under umask %s: mode %v (%v); want %v", filepath.Base(c.file), c.umask, fi.Mode().Perm(), err, c.want)
		}
	}
}

// flagFor is the history flag that writes file: --html for a page.
func flagFor(file string) string {
	if filepath.Ext(file) == ".html" {
		return "--html"
	}
	return "--svg"
}
