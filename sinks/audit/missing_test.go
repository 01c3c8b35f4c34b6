package audit

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestMissingRotatedNamesALongRunByItsEnds: a stray file beside the log
// whose suffix is a long number (logrotate's dateext with a dot, a copy
// named by date) sits far above the real rotations. Every number in
// between was named one by one: some twenty million names, a warning of
// hundreds of megabytes. A run of more than three is named by its ends.
func TestMissingRotatedNamesALongRunByItsEnds(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	for _, n := range []int{1, 3, 20261129} {
		if err := os.WriteFile(rotatedName(log, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	missing, err := MissingRotated(log)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{rotatedName(log, 2), rotatedName(log, 4) + " to " + rotatedName(log, 20261128) + " (20261125 files)"}
	if !slices.Equal(missing, want) {
		t.Errorf("missing %q (%d names), want %q", head(missing), len(missing), want)
	}
}

func head(s []string) []string { return s[:min(len(s), 4)] }
