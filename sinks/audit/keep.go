package audit

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// keepEvery is how often a running sink refreshes the modification time
// of the record of its last rotation (LastRotatedPath).
const keepEvery = 24 * time.Hour

// keepRotated refreshes the modification time of the record of the last
// rotation (LastRotatedPath) when it did not within keepEvery: at the
// sink's first open of the log, and then at most once a day (the probe
// calls it). A cleanup by age over the log's directory (find -mtime +30
// -delete) took the record once the log went that long without a
// rotation, and the log then read as holding every event again, its
// removed rotated files unmarked. With the old record alone (a log herald
// before 2026-11-30 rotated) it carries its number into the dot file
// (carryOldRecord); without a record (no rotation yet) it does nothing.
// It never takes s.mu.
func (s *Sink) keepRotated() {
	now := s.now()
	if last := s.kept.Load(); last != 0 && now.Sub(time.Unix(0, last)) < keepEvery {
		return
	}
	s.kept.Store(now.UnixNano())
	err := os.Chtimes(LastRotatedPath(s.path), now, now)
	if errors.Is(err, os.ErrNotExist) {
		err = s.carryOldRecord()
	}
	if err != nil {
		s.opts.log.Warn("audit: cannot refresh the time of the record of the last rotation; a cleanup by age (find -mtime) may remove it, and history then read the log as holding every event",
			"file", LastRotatedPath(s.path), "err", err)
	}
}

// carryOldRecord writes the dot file (LastRotatedPath) with the number
// kept in audit.log.rotated, where herald before 2026-11-30 kept it, when
// there is one: that record was the log's only one until its next
// rotation, and refreshing the dot file alone left it to age and go with
// a cleanup (find -mtime, or find -name 'audit.log.*', which it matches),
// the log whose rotated files were all archived then read as whole. The
// old record stays, read as before (lastRotated takes the higher). The
// dot file is linked into place, not renamed: a rotation that wrote it
// meanwhile (the probe runs beside one) keeps its higher number.
func (s *Sink) carryOldRecord() error {
	old, err := readRotation(filepath.Clean(s.path) + lastRotatedSuffix)
	if err != nil || old == 0 {
		return err
	}
	dot := LastRotatedPath(s.path)
	tmp := dot + ".carry"
	if err := replaceFile(tmp, []byte(strconv.Itoa(old)+"\n")); err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, dot); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return syncDir(filepath.Dir(dot))
}

// now is the sink's clock (set by tests), time.Now by default.
func (s *Sink) now() time.Time {
	if s.clock != nil {
		return s.clock()
	}
	return time.Now()
}
