//go:build unix

package audit

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/publish"
)

// An audit path that is a device or a FIFO is refused at once, by the
// reader and by the sink: /dev/zero would be read without end (a bridge
// grew to 24 GB before the kernel killed it), a FIFO blocks the open
// until a writer comes, and neither is a log.
func TestAuditPathNotARegularFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "log.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/dev/zero", "/dev/full", fifo} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadAll(context.Background(), p, nil)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("ReadAll(%s): %v, want it refused as not a regular file", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadAll(%s) still reading after 5 s", p)
		}
		s, err := New(p)
		if err != nil {
			continue // refused at New: fine too
		}
		go func() { done <- s.Connect(context.Background()) }()
		select {
		case err := <-done:
			if !errors.Is(err, publish.ErrSinkConfig) || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("Connect(%s): %v, want ErrSinkConfig saying it is not a regular file", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Connect(%s) still going after 5 s", p)
		}
		_ = s.Close()
	}
}
