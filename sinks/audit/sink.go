package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkherald/herald/internal/probe"
	"github.com/zkherald/herald/publish"
)

// Stats counts what a Sink did; tests and metrics read it.
type Stats struct {
	Batches   int64 // batches written and synced
	Syncs     int64 // successful fsyncs of the log file
	Rotations int64
	TornBytes int64 // bytes dropped from torn tails on Connect
}

// Sink appends events to an audit log. It implements publish.Sink.
type Sink struct {
	path string
	opts options

	// hbMu orders heartbeat writes (heartbeat.go); it is taken before mu.
	hbMu sync.Mutex

	mu     sync.Mutex
	f      *os.File
	fi     os.FileInfo // f's, to tell when the file at path is another
	size   int64
	closed bool
	stats  Stats
	// cut holds, once the log was replaced or cut shorter behind herald's
	// back, the groups written since (nil before): the first event of
	// every other group says gap (see markCut).
	cut map[string]bool

	// ok is what Connected says: whether the log can be written, as the
	// last look found it (see health.go).
	ok    atomic.Bool
	probe probe.Loop

	// kept is when keepRotated last refreshed the record of the last
	// rotation (UnixNano; 0 before); clock, when set (tests only), is the
	// sink's clock.
	kept  atomic.Int64
	clock func() time.Time

	// beforeWrite, when set (tests only), runs between the sink's look at
	// the log and its write: what an outside rotation does there.
	beforeWrite func()
}

var _ publish.Sink = (*Sink)(nil)

// New returns a sink writing to path. Nothing is opened before Connect.
func New(path string, opts ...Option) (*Sink, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: empty path: give the audit log's file name, e.g. /var/lib/herald/audit.log", ErrBadOption)
	}
	o := options{maxSize: DefaultMaxSize, probe: DefaultProbeInterval}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.log == nil {
		o.log = slog.Default()
	}
	return &Sink{path: filepath.Clean(path), opts: o}, nil
}

// Name implements publish.Sink.
func (s *Sink) Name() string { return "audit" }

// Private says that only this process writes the log (publish.Private):
// a bridge deposed still appends what it saw there.
func (s *Sink) Private() bool { return true }

// Path returns the live log file's name.
func (s *Sink) Path() string { return s.path }

// Stats returns the sink's counters.
func (s *Sink) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Connect opens the log, creating it and its directory when missing, and
// truncates a torn tail left by a crash. It looks whether the log can be
// written (Connected), and the first call starts the probe that looks
// again every ProbeInterval until Close, whether this Connect succeeds or
// not.
func (s *Sink) Connect(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.startProbe()
	var err error
	if s.f == nil {
		err = s.open()
	}
	s.ok.Store(err == nil && s.check() == nil)
	return err
}

func (s *Sink) open() error {
	if err := os.MkdirAll(filepath.Dir(s.path), dirMode); err != nil {
		if f := fileInTheWay(filepath.Dir(s.path)); f != "" {
			// No retry mends that: the log needs a directory there.
			return fmt.Errorf("%w: audit: cannot create the directory for %s: %s is a file, not a directory: give a path below a directory, or move that file away", publish.ErrSinkConfig, s.path, f)
		}
		return fmt.Errorf("audit: create directory for %s: %w", s.path, err)
	}
	fi, statErr := os.Stat(s.path)
	if statErr == nil && !fi.Mode().IsRegular() {
		// A device or FIFO would be read without end (/dev/zero) or
		// block the open for good (a FIFO): no retry mends that.
		return fmt.Errorf("%w: audit: %s is not a regular file (mode %v): give the path of a file herald may create, or move that one away", publish.ErrSinkConfig, s.path, fi.Mode())
	}
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, fileMode)
	if err != nil {
		return fmt.Errorf("audit: open %s: %w", s.path, err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		// The umask may have narrowed the mode; the log's mode is part
		// of its contract (readable by the herald group).
		if err := f.Chmod(fileMode); err != nil {
			f.Close()
			return fmt.Errorf("audit: chmod %s: %w", s.path, err)
		}
		if err := syncDir(filepath.Dir(s.path)); err != nil {
			f.Close()
			return fmt.Errorf("audit: sync directory of %s: %w", s.path, err)
		}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit: stat %s: %w", s.path, err)
	}
	end, err := goodEnd(f)
	if err != nil {
		f.Close()
		if errors.Is(err, ErrNotAuditLog) {
			return err
		}
		return fmt.Errorf("audit: scan the end of %s: %w", s.path, err)
	}
	if dropped := st.Size() - end; dropped > 0 {
		if err := f.Truncate(end); err != nil {
			f.Close()
			return fmt.Errorf("audit: truncate torn tail of %s: %w", s.path, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("audit: sync %s: %w", s.path, err)
		}
		s.stats.TornBytes += dropped
		s.opts.log.Warn("audit: dropped a torn tail left by a crash", "file", s.path, "bytes", dropped, "kept", end)
	}
	if s.fi != nil && (!os.SameFile(st, s.fi) || end < s.size) {
		// Closed after a failed write (undo keeps fi), the log was moved
		// away or cut behind the sink's back meanwhile (see followPath).
		s.opts.log.Warn("audit: the log file is not the one herald had open before its write failed, or was cut shorter since (an outside logrotate?); the events written before are only in the copy, which herald history does not read",
			"file", s.path, "bytes_were", s.size, "bytes_now", end)
		s.markCut()
	}
	s.f, s.fi, s.size = f, st, end
	s.keepRotated()
	return nil
}

// Write appends the batch with one write and one fsync. On error nothing of
// the batch remains in the file (or, if even that cannot be ensured, the
// error wraps publish.ErrReconnect and Connect repairs the tail).
func (s *Sink) Write(ctx context.Context, batch []publish.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, e := range batch {
		if err := e.Validate(); err != nil {
			return fmt.Errorf("audit: refusing batch: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return ErrClosed
	}
	if len(batch) == 0 {
		return nil
	}
	if err := s.followPath(); err != nil {
		return err
	}
	buf, err := s.encode(batch)
	if err != nil {
		return err
	}
	if s.size > 0 && s.size+int64(len(buf)) > s.opts.maxSize {
		if err := s.rotate(); err != nil {
			return err
		}
	}
	if s.beforeWrite != nil {
		s.beforeWrite()
	}
	if _, err := s.f.Write(buf); err != nil {
		return s.undo(fmt.Errorf("audit: write %d events to %s: %w", len(batch), s.path, err))
	}
	if err := s.f.Sync(); err != nil {
		// After a failed fsync the kernel may have dropped the dirty
		// pages; only a reopen tells what is really on disk.
		return s.undo(fmt.Errorf("audit: fsync %s: %w", s.path, err))
	}
	if err := s.landed(batch, int64(len(buf))); err != nil {
		return err
	}
	s.stats.Batches++
	s.stats.Syncs++
	if s.cut != nil {
		for _, e := range batch {
			s.cut[e.Group] = true
		}
	}
	return nil
}

// encode is the batch's lines. After the log was replaced or cut behind
// herald's back, the first event of a group not written since says gap:
// the events before it are in the copy an outside rotation kept, which
// history does not read, and the log at the path began with a change
// that followed nobody, its owners before it gone without a mark. Its id
// stays: merged with another log holding it unmarked, the mark goes.
// Called with s.mu held.
func (s *Sink) encode(batch []publish.Event) ([]byte, error) {
	var buf []byte
	marked := map[string]bool{}
	for _, e := range batch {
		if s.cut != nil && !s.cut[e.Group] && !marked[e.Group] {
			marked[e.Group] = true
			e.Gap = true
		}
		line, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("audit: encode %s: %w", e.ID, err)
		}
		buf = append(append(buf, line...), '\n')
	}
	return buf, nil
}

// landed counts the n bytes of batch just written, unless the log was
// cut shorter (logrotate's copytruncate) between followPath's look and the
// write: the batch then landed unmarked at the start of the cut log,
// where history reads a group's first event as following nobody, and is
// written there again as after a cut seen (see encode). The file's offset
// after an append is its end, so it tells. Called with s.mu held.
func (s *Sink) landed(batch []publish.Event, n int64) error {
	end, err := s.f.Seek(0, io.SeekCurrent)
	if err != nil || end >= s.size+n || end < n {
		s.size += n
		return nil
	}
	s.opts.log.Warn("audit: the log file was cut shorter behind herald's back (logrotate's copytruncate?) while a batch was written; writing it again, marked as a gap: the events written before are only in the copy, which herald history does not read",
		"file", s.path, "bytes_were", s.size, "bytes_now", end-n)
	s.size = end - n
	s.markCut()
	buf, err := s.encode(batch)
	if err != nil {
		return s.undo(err)
	}
	if err := s.f.Truncate(s.size); err != nil {
		return s.undo(fmt.Errorf("audit: cut the unmarked batch from %s: %w", s.path, err))
	}
	if _, err := s.f.Write(buf); err != nil {
		return s.undo(fmt.Errorf("audit: write %d events to %s: %w", len(batch), s.path, err))
	}
	if err := s.f.Sync(); err != nil {
		return s.undo(fmt.Errorf("audit: fsync %s: %w", s.path, err))
	}
	s.size += int64(len(buf))
	s.stats.Syncs++
	return nil
}

// markCut notes that the log at the path no longer holds what was written
// before (see encode).
func (s *Sink) markCut() { s.cut = map[string]bool{} }

// followPath starts a new log at the path when the file there is no longer
// the one open: removed, renamed or replaced behind the sink's back (its
// directory deleted and made again, a disk unmounted, an outside
// logrotate). Appending to the open one would store events where nobody
// reads them. Called with s.mu held and the log open.
//
// A file cut shorter behind its back (logrotate's copytruncate, which
// leaves the events written before in its copy, where history does not
// read them) is appended to as it is: the sink's count of its bytes
// follows, so that it neither rotates early nor, undoing a failed
// write, pads the file back out to the old length with zeros.
func (s *Sink) followPath() error {
	fi, err := os.Stat(s.path)
	if err == nil && os.SameFile(fi, s.fi) {
		if fi.Size() < s.size {
			s.opts.log.Warn("audit: the log file was cut shorter behind herald's back (logrotate's copytruncate?); the events written before are only in the copy, which herald history does not read: leave rotation to herald (its numbered files are read; logrotate's copies, renamed or copied, are not), and give the copy its own --audit to read it",
				"file", s.path, "bytes_were", s.size, "bytes_now", fi.Size())
			s.size = fi.Size()
			s.markCut()
		}
		return nil
	}
	s.opts.log.Warn("audit: the log file is no longer the one herald had open (removed, renamed or replaced); starting a new one at its path",
		"file", s.path, "err", err)
	s.f.Close()
	s.f, s.fi = nil, nil
	s.markCut()
	if err := s.open(); err != nil {
		s.ok.Store(false)
		return fmt.Errorf("%w: %w", publish.ErrReconnect, err)
	}
	return nil
}

// undo cuts the file back to before the failed batch, then closes it so the
// next Connect reopens and checks it. The log reads not connected until
// then, or until the probe finds it writable.
func (s *Sink) undo(cause error) error {
	if err := s.f.Truncate(s.size); err != nil {
		cause = fmt.Errorf("%w; truncating back to %d bytes also failed: %v", cause, s.size, err)
	}
	s.f.Close()
	// fi stays: the next open tells whether the log at the path is still
	// this one.
	s.f = nil
	s.ok.Store(false)
	return fmt.Errorf("%w: %w", publish.ErrReconnect, cause)
}

// rotate renames the live file to the next sequence and starts a new one.
// The next is above the last rotation's too (LastRotatedPath): with every
// rotated file moved away, numbering from 1 again reused an archived
// file's name, and the log read as holding every event.
func (s *Sink) rotate() error {
	_, seqs, err := rotated(s.path)
	if err != nil {
		return fmt.Errorf("audit: list rotated files of %s: %w", s.path, err)
	}
	last, err := lastRotated(s.path)
	if err != nil {
		s.opts.log.Warn("audit: cannot read the number of the last rotation; numbering after the rotated files found", "err", err)
	}
	if len(seqs) > 0 {
		last = max(last, seqs[len(seqs)-1])
	}
	next := nextSeq(last)
	to := rotatedName(s.path, next)
	s.f.Close()
	s.f, s.fi = nil, nil
	if err := os.Rename(s.path, to); err != nil {
		s.ok.Store(false)
		return fmt.Errorf("%w: audit: rotate %s to %s: %w", publish.ErrReconnect, s.path, to, err)
	}
	// Kept after the rename: kept before, a failed rename would leave a
	// number no file has, a hole where none was.
	if err := replaceFile(LastRotatedPath(s.path), []byte(strconv.Itoa(next)+"\n")); err != nil {
		s.opts.log.Warn("audit: cannot keep the number of the rotation; should every rotated file be moved away, the next rotation may reuse a name and history read the log as whole", "err", err)
	}
	if err := s.open(); err != nil {
		s.ok.Store(false)
		return fmt.Errorf("%w: %w", publish.ErrReconnect, err)
	}
	s.stats.Rotations++
	s.opts.log.Info("audit: rotated", "file", s.path, "to", to)
	return nil
}

// Close stops the probe and closes the log; later Writes fail with
// ErrClosed, and Connected says false.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.stopProbe()
	s.ok.Store(false)
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f, s.fi = nil, nil
	if err != nil {
		return fmt.Errorf("audit: close %s: %w", s.path, err)
	}
	return nil
}

// fileInTheWay is the nearest of dir and its parents that exists and is
// no directory ("" when there is none): the file a log's directory would
// have to be made through.
func fileInTheWay(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil {
			if fi.IsDir() {
				return ""
			}
			return d
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}
