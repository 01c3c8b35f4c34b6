package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zkherald/herald/publish"
)

var _ publish.ConnState = (*Sink)(nil)

// Connected implements publish.ConnState: whether the log can still be
// written, as the last look found it. It is false before Connect and after
// Close. The sink looks when Connect runs and then every ProbeInterval
// (default 5s) until Close; a Write that fails to store its batch also
// makes it false until the next look.
//
// A look is a real write, because nothing cheaper is true:
//
//   - it creates, writes and removes a small file (".audit.log.probe"
//     beside audit.log) in the log's directory. Permission bits say
//     nothing when herald runs as root, access(2) misses a full disk or
//     quota, and statfs's free counts miss quotas and root's reserved
//     blocks; a write fails in each case, whoever herald runs as. It is
//     not synced: write(2) already fails on a full disk, and an fsync
//     every few seconds would cost the disk more than the look is worth.
//   - it opens the log for appending (created when missing): a directory,
//     a FIFO or an immutable file at its path fails here.
//
// A directory that takes no new file reads not connected even while
// appends to the open log still succeed: the next rotation, or the reopen
// after any failure, would fail, and an operator should learn that before
// it happens. A log removed or replaced behind the sink's back (its
// directory deleted, the disk unmounted, an outside logrotate) does not:
// the next Write notices the open file is no longer the one at the path
// and starts a new one there, instead of appending where nobody reads.
func (s *Sink) Connected() bool { return s.ok.Load() }

// startProbe starts the probe behind Connected unless it runs. Called
// with s.mu held.
func (s *Sink) startProbe() { s.probe.Start(s.watch) }

// stopProbe stops the probe and waits for it to end. Called with s.mu held
// (the probe never takes it).
func (s *Sink) stopProbe() { s.probe.Stop() }

// watch looks every interval until ctx ends. Connect has just looked, so
// the first look waits an interval; warned starts as Connect left it.
func (s *Sink) watch(ctx context.Context) {
	t := time.NewTicker(s.opts.probe)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := s.check()
		if ctx.Err() != nil {
			return // Close may be removing what the look saw
		}
		s.keepRotated()
		s.ok.Store(err == nil)
		switch {
		case err != nil && !warned:
			warned = true
			s.opts.log.Warn("audit: the log cannot be written; the sink reads not healthy until it can", "file", s.path, "err", err)
		case err == nil && warned:
			warned = false
			s.opts.log.Info("audit: the log can be written again", "file", s.path)
		}
	}
}

// probeName is the file a look creates and removes beside the log.
func (s *Sink) probeName() string {
	return filepath.Join(filepath.Dir(s.path), "."+filepath.Base(s.path)+".probe")
}

// check is one look (see Connected); it says what is wrong and what to do.
func (s *Sink) check() error {
	dir := filepath.Dir(s.path)
	advice := "check that it exists, is mounted read-write, is writable by herald's user and has space"
	name := s.probeName()
	// Made anew, never opened through what is at its name: a link there
	// (whoever may write the directory can put one) was followed, and the
	// file it named truncated at every look.
	_ = os.Remove(name)
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return fmt.Errorf("audit: the directory %s takes no new file (%w): %s", dir, err, advice)
	}
	_, err = f.Write([]byte("herald audit probe\n"))
	err = errors.Join(err, f.Close(), os.Remove(name))
	if err != nil {
		return fmt.Errorf("audit: the directory %s cannot be written (%w): %s", dir, err, advice)
	}
	if fi, err := os.Stat(s.path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("audit: %s is not a regular file (mode %v): move it away, so herald can start the log there", s.path, fi.Mode())
	} else if errors.Is(err, os.ErrNotExist) {
		return nil // the next Write or Connect creates it
	}
	lf, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("audit: %s cannot be opened for appending (%w): check its owner, mode and attributes (lsattr)", s.path, err)
	}
	return lf.Close()
}
