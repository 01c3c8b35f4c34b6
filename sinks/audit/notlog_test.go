package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/sinktest"
)

// TestAnotherFileIsNotCutAsATornTail: a file that holds no complete event
// and lines herald cannot have begun (notes, a pretty-printed JSON or a
// YAML file given as --audit by mistake, or a link to one) was cut to
// nothing as "a torn tail left by a crash", and the events appended to
// it. Connect now refuses it, for good (publish.ErrSinkConfig), and leaves
// it whole. What a crash leaves of a log's first write (a line begun, or
// zeros) is still dropped, and the log started.
func TestAnotherFileIsNotCutAsATornTail(t *testing.T) {
	for name, content := range map[string]string{
		"notes":       "my notes\nline two\n",
		"unended":     "no newline at all",
		"pretty json": "{\n  \"owners\": [\"a\"]\n}\n",
		"yaml":        "zk: [zk1:2181]\naudit: /var/log/herald/audit.log\n",
	} {
		path := filepath.Join(t.TempDir(), "audit.log")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := New(path, quiet())
		if err != nil {
			t.Fatal(err)
		}
		err = s.Connect(context.Background())
		s.Close()
		if !errors.Is(err, ErrNotAuditLog) || !errors.Is(err, publish.ErrSinkConfig) {
			t.Errorf("%s: Connect: %v; want ErrNotAuditLog, a settings error", name, err)
		}
		if b, _ := os.ReadFile(path); string(b) != content {
			t.Errorf("%s: the file became %q; want it untouched", name, b)
		}
	}
	for name, tail := range map[string]string{
		"begun": `{"id":"abc","type":"leader.el`,
		"zeros": "\x00\x00\x00\x00\n\x00\x00",
		"lines": "{\"id\":\"x\",\x00\x00\n{\"id\":",
	} {
		path := filepath.Join(t.TempDir(), "audit.log")
		if err := os.WriteFile(path, []byte(tail), 0o640); err != nil {
			t.Fatal(err)
		}
		s := open(t, path)
		if d := s.Stats().TornBytes; d != int64(len(tail)) {
			t.Errorf("%s: a torn first write: dropped %d bytes, want %d", name, d, len(tail))
		}
		write(t, s, sinktest.Events("first", 1, 1))
		if got := readIDs(t, path); len(got) != 1 {
			t.Errorf("%s: after the repair, %d events; want 1", name, len(got))
		}
	}
}
