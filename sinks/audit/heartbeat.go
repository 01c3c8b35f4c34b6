package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zkherald/herald/publish"
)

// The log's heartbeat. A log alone cannot say whether an owner its events
// leave holding still holds: its bridge may have stopped, been deposed or
// killed since. So the Sink keeps, beside the log, its bridge's latest
// heartbeat (publish.Heartbeat), in one small file replaced whole at every
// heartbeat (HeartbeatPath: audit.log.heartbeat). The bridge writes an
// active heartbeat there only once the log holds every event published
// before its time, as for the shared stores; "standby" the moment it stops
// publishing, and "stopped" on a clean stop. A reader judges the owners
// the log leaves holding with it, as the owners bucket's readers do:
// confirmed while the heartbeat is active and recent, stale from then on.
// The log itself gets no heartbeat lines: it keeps only events.

var _ publish.HeartbeatSink = (*Sink)(nil)

// heartbeatSuffix names the heartbeat file beside the log. It is no
// rotated file's name (those end in digits only).
const heartbeatSuffix = ".heartbeat"

// HeartbeatPath is the file beside the log at path where its bridge's
// latest heartbeat is kept.
func HeartbeatPath(path string) string { return filepath.Clean(path) + heartbeatSuffix }

// WriteHeartbeat implements publish.HeartbeatSink: it replaces the
// heartbeat file beside the log with h, atomically (a reader sees the old
// record or the new one, never part of one), and durably before it
// returns, so that a crash leaves the last heartbeat written, not an empty
// file.
func (s *Sink) WriteHeartbeat(ctx context.Context, h publish.Heartbeat) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := h.Validate(); err != nil {
		return fmt.Errorf("audit: refusing heartbeat: %w", err)
	}
	b, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("audit: encode heartbeat: %w", err)
	}
	s.hbMu.Lock()
	defer s.hbMu.Unlock()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return replaceFile(HeartbeatPath(s.path), append(b, '\n'))
}

// replaceFile writes data to a new file beside path, syncs it and renames
// it over path.
func replaceFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("audit: create directory for %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("audit: write %s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("audit: write %s: %w", path, err)
	}
	if err := f.Chmod(fileMode); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("audit: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("audit: write %s: %w", path, err)
	}
	return nil
}

// ReadHeartbeat reads the heartbeat kept beside the log at path. found is
// false, with no error, when there is none: a log written by herald built
// before 2026-11-26, or by a bridge that never wrote one. A file that
// exists but cannot be read or holds no valid heartbeat is an error that
// names it.
func ReadHeartbeat(path string) (h publish.Heartbeat, found bool, err error) {
	p := HeartbeatPath(path)
	b, err := os.ReadFile(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return h, false, nil
	case err != nil:
		return h, false, fmt.Errorf("audit: read the log's heartbeat: %w", err)
	}
	h, err = publish.DecodeHeartbeat(b)
	if err != nil {
		return h, false, fmt.Errorf("audit: %s holds no valid heartbeat (%v): it is the file herald bridge --audit keeps beside the log; remove it if something else wrote it", p, err)
	}
	return h, true, nil
}
