//go:build unix

package audit

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestProbeWritesThroughNoLink: the probe file the sink makes beside the
// log has a fixed name, and was opened with O_TRUNC, following a
// symbolic link at that name: whoever may write the log's directory (a
// group-writable /var/log/herald) could link it to any file herald may
// write, and each look truncated that file. The probe is now made anew,
// never through a link, and the sink still reads healthy.
func TestProbeWritesThroughNoLink(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	victim := filepath.Join(elsewhere, "precious")
	if err := os.WriteFile(victim, []byte("precious data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "audit.log")
	s, err := New(path, quiet(), ProbeInterval(probeEvery))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, s.probeName()); err != nil {
		t.Fatal(err)
	}
	if err := s.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if b, err := os.ReadFile(victim); err != nil || string(b) != "precious data\n" {
		t.Errorf("the file the probe's name linked to: %q (%v); want it untouched", b, err)
	}
	if !s.Connected() {
		t.Errorf("the sink reads not healthy after a link at its probe's name")
	}
}
