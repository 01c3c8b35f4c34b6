package audit

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	json "github.com/goccy/go-json"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// Reader reads an audit log and its rotated files, oldest first.
type Reader struct {
	names []string
	files []*os.File
	// srcs is what each of files holds, decompressed (contentOf).
	srcs []io.Reader
	i    int
	br   *bufio.Reader
	line int
	torn int
	// overlong says the line read was longer than maxLine (longLine).
	overlong bool
	// holes says, for each file, whether rotated files are missing just
	// before it; afterHole, once past one, the groups read since: the
	// first event of each other group says gap (see decode).
	holes     []bool
	afterHole map[string]bool
	// lines and bytes count the lines read so far, of every file.
	lines, bytes int64
	// headGone: the rotated files listed began after files removed from
	// the head (retention), as OldestRemoved tells.
	headGone bool
	// last is the number of the last rotation when the files were
	// listed: the live log read is rotated to the number after it.
	last int
	// strs holds one copy of each string the events repeat (groups,
	// sources, types, ids, nodes), which every event read shares: a log
	// of millions names a few thousand groups and owners.
	strs map[string]string
}

// Open opens the log at path and every rotated file next to it. The set of
// files is fixed at Open: all are opened at once, so a rotation while
// reading neither skips nor repeats lines.
func Open(path string) (*Reader, error) {
	for try := 1; ; try++ {
		r, err := openOnce(path)
		if !errors.Is(err, errLiveMoved) || try == openTries {
			return r, err
		}
	}
}

// errLiveMoved is openOnce's when the live log it opened was rotated and
// its rotated file is gone by the listing: compressed (gzip writes
// audit.log.000001.gz, a file of its own, and removes the one opened) or
// moved away. Read as the live log, and from the .gz listed too, its
// events were read twice, each tenure in it told twice; opened again,
// the .gz is read, once.
var errLiveMoved = errors.New("audit: the log was rotated and its rotated file compressed or moved away while it was opened, each time it was opened")

// openTries is how many times Open opens the log rotated away as it
// opens (errLiveMoved) before it gives up: each rotation is a batch of
// events written, a compression of the file a second or more.
const openTries = 5

// openOnce is Open, or errLiveMoved.
func openOnce(path string) (*Reader, error) {
	// The live log is opened before the rotated files are listed: opened
	// after, a rotation in between renamed the file holding the events
	// to a name not listed, and the reader read the new log instead,
	// silently without them. Opened before, the file a rotation in
	// between renamed is listed too, and read once (see liveListed).
	live, err := openLive(path)
	if err != nil {
		return nil, err
	}
	if openHook != nil {
		openHook("live opened")
	}
	// The last rotation's number is read before the files are listed: a
	// rotation in between then adds a file, not a hole.
	last, _ := lastRotated(path)
	names, seqs, err := rotated(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		closeLive(live)
		return nil, fmt.Errorf("audit: list rotated files of %s: %w", path, err)
	}
	if live != nil && !liveListed(live, names) && !liveAt(live, path) {
		closeLive(live)
		return nil, fmt.Errorf("%w: %s", errLiveMoved, path)
	}
	if openHook != nil {
		openHook("listed")
	}
	if live != nil && liveListed(live, names) {
		closeLive(live)
		live = nil
	}
	if live != nil {
		names = append(names, path)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("audit: no audit log at %s (nor rotated %s.NNNNNN files): check the path: %w", path, path, os.ErrNotExist)
	}
	r := &Reader{names: names, holes: holesBefore(seqs, last, live != nil),
		headGone: len(seqs) > 0 && seqs[0] > 1 || len(seqs) == 0 && last > 0, last: last}
	if len(seqs) > 0 {
		r.last = max(last, seqs[len(seqs)-1])
	}
	for i := range names[:len(seqs)] {
		f, partial, err := openRotated(&r.names[i])
		if err != nil {
			closeLive(live)
			r.Close()
			return nil, err
		}
		if partial && i+1 < len(r.holes) {
			r.holes[i+1] = true // what it lacks is missing before the next
		}
		r.files = append(r.files, f)
	}
	if live != nil {
		r.files = append(r.files, live)
	}
	for i, f := range r.files {
		src, err := contentOf(f)
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("audit: read %s: %w", r.names[i], err)
		}
		r.srcs = append(r.srcs, src)
	}
	r.br = bufio.NewReaderSize(r.srcs[0], 64<<10)
	return r, nil
}

// contentOf is what f holds: decompressed when it is gzip or bzip2, told
// by its first bytes (an audit line begins with "{"), read as it is
// otherwise. logrotate's compress (gzip by default) leaves
// audit.log.2.gz; read as text, it was no audit log, and a history
// could only say it was not read and count it for every group.
func contentOf(f *os.File) (io.Reader, error) {
	magic := make([]byte, 3)
	n, _ := f.ReadAt(magic, 0)
	switch {
	case n >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		return gzip.NewReader(f)
	case n == 3 && string(magic) == "BZh":
		return bzip2.NewReader(f), nil
	}
	return f, nil
}

// openLive opens the live log at path; nil, without error, when there is
// none.
func openLive(path string) (*os.File, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	f, err := openRegular(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // renamed by a rotation since: listed next
	}
	return f, err
}

// openRotated opens the rotated file *name, or, when it is gone, the
// same compressed in place since it was listed (gzip audit.log.000001
// writes audit.log.000001.gz and then removes the file), whose name it
// puts in *name: the read failed, the file not found. When both are
// there, it opens the one whole (wholeOf); partial says neither could be
// shown whole.
func openRotated(name *string) (*os.File, bool, error) {
	f, err := openRegular(*name)
	if err == nil {
		return wholeOf(f, name)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, false, err
	}
	for _, ext := range readableExts {
		if g, gErr := openRegular(*name + ext); gErr == nil {
			*name += ext
			return g, false, nil
		}
	}
	return nil, false, err
}

// openRegular opens the file n, refusing a device or FIFO: one reads
// without end (/dev/zero), the other blocks the open until a writer comes.
func openRegular(n string) (*os.File, error) {
	if fi, err := os.Stat(n); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("audit: %s is not a regular file (mode %v): give the path of an audit log herald wrote", n, fi.Mode())
	}
	f, err := os.Open(n)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return f, nil
}

// liveListed reports whether the live log opened is one of the rotated
// files listed: a rotation (or more) renamed it after it was opened, and
// it is read under that name, once.
func liveListed(live *os.File, names []string) bool {
	a, err := live.Stat()
	if err != nil {
		return false
	}
	for i := len(names) - 1; i >= 0; i-- {
		if b, err := os.Stat(names[i]); err == nil && os.SameFile(a, b) {
			return true
		}
	}
	return false
}

// liveAt reports whether the live log opened is still the file at path:
// not, and not listed, it was rotated and its rotated file then
// compressed or moved away before the listing (errLiveMoved).
func liveAt(live *os.File, path string) bool {
	a, err := live.Stat()
	if err != nil {
		return true // unknown: read as opened, as before
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

func closeLive(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// openHook, when set (tests only), runs at each step of Open: what a
// rotation there does.
var openHook func(step string)

// Next returns the next event. At the end it returns io.EOF. A malformed
// line yields a *LineError (matching ErrMalformed); call Next again to go
// on. An unterminated last line of a file, a write cut short or still in
// progress, is skipped and counted in Torn.
func (r *Reader) Next() (publish.Event, error) {
	b, err := r.nextLine()
	if err != nil {
		return publish.Event{}, err
	}
	return r.decode(b)
}

// nextLine returns the next line that is not blank, trimmed, or io.EOF.
// The line is valid until the next call.
func (r *Reader) nextLine() ([]byte, error) {
	for r.i < len(r.files) {
		b, err := r.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			b, err = r.longLine(b)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("audit: read %s: %w", r.names[r.i], err)
		}
		if errors.Is(err, io.EOF) {
			if len(b) > 0 {
				r.torn++
			}
			r.overlong = false
			r.advance()
			continue
		}
		r.line++
		r.lines++
		r.bytes += int64(len(b))
		if b = bytes.TrimSpace(b); len(b) > 0 || r.overlong {
			return b, nil
		}
	}
	return nil, io.EOF
}

// maxLine is the most of a line the Reader holds, far above any event's
// size: a line longer is malformed (errOverlong).
const maxLine = 16 << 20

var errOverlong = fmt.Errorf("longer than %d MiB, no event", maxLine>>20)

// longLine reads the rest of a line longer than the buffer, begun with b,
// holding at most maxLine bytes of it and letting the rest go as read
// (r.overlong). Held whole, a gzip file of a quarter megabyte, 256 MiB of
// zeros with no newline, took some 2 GiB.
func (r *Reader) longLine(b []byte) ([]byte, error) {
	long := append([]byte(nil), b...)
	err := bufio.ErrBufferFull
	for errors.Is(err, bufio.ErrBufferFull) {
		b, err = r.br.ReadSlice('\n')
		if len(long)+len(b) > maxLine {
			r.overlong = true
			r.bytes += int64(len(b))
			continue
		}
		long = append(long, b...)
	}
	return long, err
}

// decode reads line b, the reader's current line, as an event.
func (r *Reader) decode(b []byte) (publish.Event, error) {
	var e publish.Event
	if r.overlong {
		r.overlong = false
		return e, &LineError{File: r.names[r.i], Line: r.line, Err: errOverlong}
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, &LineError{File: r.names[r.i], Line: r.line, Err: err}
	}
	if err := e.Validate(); err != nil {
		return e, &LineError{File: r.names[r.i], Line: r.line, Err: err}
	}
	r.share(&e)
	if r.afterHole != nil && !r.afterHole[e.Group] {
		// The removed file's events may have ended the owner the events
		// before it left and told of others: the group's first event
		// after it followed them, unseen, and told as following the last
		// owner read it left them out without a mark.
		r.afterHole[e.Group] = true
		e.Gap = true
	}
	return e, nil
}

// share makes e's repeated strings the reader's one copy of each.
func (r *Reader) share(e *publish.Event) {
	if r.strs == nil {
		r.strs = map[string]string{}
	}
	one := func(s string) string {
		if c, ok := r.strs[s]; ok {
			return c
		}
		r.strs[s] = s
		return s
	}
	e.Group, e.Source, e.Hazard, e.Note = one(e.Group), one(e.Source), one(e.Hazard), one(e.Note)
	e.Type, e.Recipe, e.Reason = publish.Type(one(string(e.Type))), elect.Recipe(one(string(e.Recipe))), elect.Reason(one(string(e.Reason)))
	for _, p := range []*publish.Participant{e.Owner, e.Previous, e.Candidate} {
		if p != nil {
			p.ID, p.Node, p.Session = one(p.ID), one(p.Node), one(p.Session)
		}
	}
}

func (r *Reader) advance() {
	r.i++
	r.line = 0
	if r.i < len(r.files) {
		r.br.Reset(r.srcs[r.i])
		if r.holes[r.i] {
			r.afterHole = map[string]bool{}
		}
	}
}

// Files returns the files the Reader reads, in order.
func (r *Reader) Files() []string { return append([]string(nil), r.names...) }

// Torn returns how many unterminated last lines were skipped so far.
func (r *Reader) Torn() int { return r.torn }

// Close closes every file.
func (r *Reader) Close() error {
	var errs []error
	for _, f := range r.files {
		errs = append(errs, f.Close())
	}
	r.files = nil
	r.i = 0
	return errors.Join(errs...)
}

// ReadAll reads every event of the log at path that filter accepts (nil
// accepts all). Malformed lines do not stop it: the events are returned
// together with an error joining one *LineError per bad line. Any other
// error, or ctx ending, stops the read.
func ReadAll(ctx context.Context, path string, filter func(publish.Event) bool) ([]publish.Event, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []publish.Event
	var bad []error
	for {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if r.lines == sizeAfter {
			out = slices.Grow(out, max(0, r.expect(len(out))-len(out)))
		}
		e, err := r.Next()
		var le *LineError
		switch {
		case errors.Is(err, io.EOF):
			return out, errors.Join(bad...)
		case errors.As(err, &le):
			bad = append(bad, err)
		case err != nil:
			return out, err
		case filter == nil || filter(e):
			out = append(out, e)
		}
	}
}

// sizeAfter is how many lines ReadAll reads before it sizes its result for
// the whole log: a year's log holds millions of events, and a slice grown
// by doubling copies each of them again and again.
const sizeAfter = 4096

// expect estimates how many events a read that kept kept of the lines so
// far keeps of the whole log, from the files' sizes, with a tenth more
// (less than kept when a file shrank meanwhile).
func (r *Reader) expect(kept int) int {
	if r.bytes == 0 {
		return kept
	}
	var total int64
	for _, f := range r.files {
		if fi, err := f.Stat(); err == nil {
			total += fi.Size()
		}
	}
	return int(float64(kept) * float64(total) / float64(r.bytes) * 1.1)
}
