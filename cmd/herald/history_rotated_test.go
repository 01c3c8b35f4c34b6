package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkherald/herald/sinks/audit"
)

// TestHistoryWarnsOfARotatedFileMissing: an audit log whose rotated files
// have a hole (.000001 and .000003 are there, .000002 was removed) is read,
// with a warning naming the missing file: its events are not in the
// history, and nothing else would say which file held them.
func TestHistoryWarnsOfARotatedFileMissing(t *testing.T) {
	g := uniq(t)
	path := filepath.Join(t.TempDir(), "audit.log")
	as, err := audit.New(path)
	if err != nil {
		t.Fatal(err)
	}
	write(t, as, story(g)...)
	if err := as.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{".000001", ".000003"} {
		if err := os.WriteFile(path+n, b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, code := heraldRun(t, nil, "history", g, "--audit", path)
	if code != 0 || !strings.Contains(out, "bravo") || !strings.Contains(stderr, "missing") || !strings.Contains(stderr, path+".000002") {
		t.Errorf("history of a log whose .000002 is missing: exit %d, want the history and a warning naming %s.000002:\n%s%s", code, path, out, stderr)
	}
	if err := os.Remove(path + ".000001"); err != nil {
		t.Fatal(err)
	}
	if _, stderr, _ = heraldRun(t, nil, "history", g, "--audit", path); strings.Contains(stderr, "missing between") {
		t.Errorf("history of a log whose oldest files were removed warns of a hole:\n%s", stderr)
	}
}
