package audit

import (
	"errors"
	"os"
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
// removed rotated files unmarked. Without a record (no rotation yet) it
// does nothing. It never takes s.mu.
func (s *Sink) keepRotated() {
	now := s.now()
	if last := s.kept.Load(); last != 0 && now.Sub(time.Unix(0, last)) < keepEvery {
		return
	}
	s.kept.Store(now.UnixNano())
	err := os.Chtimes(LastRotatedPath(s.path), now, now)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		s.opts.log.Warn("audit: cannot refresh the time of the record of the last rotation; a cleanup by age (find -mtime) may remove it, and history then read the log as holding every event",
			"file", LastRotatedPath(s.path), "err", err)
	}
}

// now is the sink's clock (set by tests), time.Now by default.
func (s *Sink) now() time.Time {
	if s.clock != nil {
		return s.clock()
	}
	return time.Now()
}
