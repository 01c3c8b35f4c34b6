package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkherald/herald/publish"
)

// An audit path below a regular file (a directory of the path is a file)
// is refused at once as a setting no retry mends, naming that file.
func TestAuditPathBelowARegularFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New(filepath.Join(file, "logs", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Connect(context.Background())
	if !errors.Is(err, publish.ErrSinkConfig) || !strings.Contains(err.Error(), file+" is a file, not a directory") {
		t.Errorf("Connect below a regular file: %v; want publish.ErrSinkConfig naming %s", err, file)
	}
}
