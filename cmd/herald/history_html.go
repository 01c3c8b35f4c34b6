package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/zkherald/herald/internal/timeline"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

// timeline draws the history a source tells (see history) as a timeline
// into an HTML page and/or an SVG file, or to standard output for "-": the
// rows overlapping the window w, when one is given. The source is read a
// batch of groups at a time, as history reads it: the chart holds the
// rows it draws, not the events. Each file is written as writeWhole says,
// so a failed write leaves no half a page in a regular file.
func (a *app) timeline(ctx context.Context, sf *sourceFlags, files []string, group string, heldEvents int, htmlOut, svgOut string, w window) error {
	if htmlOut == "-" && svgOut == "-" {
		return usageErr("--html - and --svg -: only one of them can go to standard output; give the other a file")
	}
	src, err := historySource(sf, files, heldEvents)
	if err != nil {
		return err
	}
	b := timeline.NewBuilder()
	if w.set() {
		// Up to now, not to the last event: an open tenure reaches a
		// window after its last event as not seen since, as its row says.
		b = timeline.NewWindowBuilder(w.now, w.since, w.until)
	}
	owners := a.ownersOnce(ctx, sf, src, group)
	scope := a.scopeMarks(ctx, sf, src, files, owners)
	seen := map[string]bool{}
	tell := a.teller(ctx, sf, src, files, group)
	err = a.eachBatch(ctx, sf, src, files, group, heldEvents, func(events []publish.Event) error {
		for _, e := range events {
			seen[e.Group] = true
		}
		ts := scope(events, tell(events))
		if w.set() {
			w.learn(ts) // each group's rows are all in its batch
		}
		b.Add(events, ts, w.overlaps)
		return nil
	})
	if err != nil {
		return unreachableExit(err)
	}
	if err := a.addUnheard(ctx, sf, src, group, owners, seen, scope, b, w); err != nil {
		return unreachableExit(err)
	}
	source := sf.describe(files)
	if note := ownersNote(src, owners); note != "" {
		source += "; " + note // on the page, not only in a warning
	}
	return a.writeTimeline(b.Chart(), htmlOut, svgOut, source, w)
}

// addUnheard adds to b, as history shows them, the owners the owners view
// of a stream or topic names in groups no stored event tells of (seen:
// those some event does): retention dropped their events, and the chart
// left out an owner the table showed (found by a review). A group whose
// first event came after the events were read is drawn from its events,
// read again (rereader), as the table tells it.
func (a *app) addUnheard(ctx context.Context, sf *sourceFlags, src, group string, owners func() (map[string]ownerNow, error), seen map[string]bool, scope func([]publish.Event, []audit.Tenure) []audit.Tenure, b *timeline.Builder, w window) error {
	if owners == nil {
		return nil
	}
	view, err := owners()
	if err != nil {
		a.log.Warn("could not read the owners view: owners of groups whose stored events were all dropped are left out", "err", err)
		return nil
	}
	want := map[string]bool{}
	for g, n := range view {
		if n.node != "" && !seen[g] {
			want[g] = true
		}
	}
	if len(want) == 0 {
		return nil
	}
	events, err := a.rereader(ctx, sf, src, group)(want)
	if err != nil {
		return err
	}
	for _, e := range events {
		delete(want, e.Group)
	}
	ts := mergeGroups(scope(events, audit.History(events)), unheardTenures(a.log, view, want))
	if w.set() {
		w.learn(ts)
	}
	b.Add(events, ts, w.overlaps)
	return nil
}

// writeTimeline writes chart, as timeline says.
func (a *app) writeTimeline(chart timeline.Chart, htmlOut, svgOut, source string, w window) error {
	// What herald says about the files goes where it does not mix with a
	// page written to standard output.
	report := a.stdout
	if htmlOut == "-" || svgOut == "-" {
		report = a.stderr
	}
	if w.set() {
		source += "; the rows overlapping " + w.String() + ", shown whole"
	}
	tenures := 0
	for _, l := range chart.Lines {
		for _, t := range l.Tenures {
			if !t.Missing { // a stretch of missing owners is no tenure
				tenures++
			}
		}
	}
	for _, out := range []struct {
		flag, path string
		render     func(*bytes.Buffer) error
	}{
		{"--html", htmlOut, func(b *bytes.Buffer) error { return chart.WriteHTML(b, "herald: who led when", source) }},
		{"--svg", svgOut, func(b *bytes.Buffer) error {
			b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
			return chart.WriteSVG(b)
		}},
	} {
		if out.path == "" {
			continue
		}
		var buf bytes.Buffer
		if err := out.render(&buf); err != nil {
			return err
		}
		name := out.path
		if out.path == "-" {
			name = "standard output"
			if _, err := a.stdout.Write(buf.Bytes()); err != nil {
				return fmt.Errorf("%s -: %w", out.flag, err)
			}
		} else if err := writeWhole(out.path, buf.Bytes()); err != nil {
			return fmt.Errorf("%s %s: %w; give a file in a directory you can write", out.flag, out.path, err)
		}
		fmt.Fprintf(report, "wrote %s: %d tenures of %d groups\n", name, tenures, len(chart.Lines))
	}
	return nil
}

// writeWhole writes data to path. A regular file (or a new one) is
// replaced whole, through a temporary file beside it and a rename, keeping
// the mode of the file it replaces; a new one gets 0666 less the umask, as
// a shell's redirect would give it (0644 under the usual 022; a forced
// 0644 made the owners' names world-readable under umask 077). A symbolic link is
// followed and the file it points to replaced, the link left as it is. A
// path that exists and is no regular file (a device, a FIFO, /dev/stdout) is
// written to as it is, never replaced.
func writeWhole(path string, data []byte) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory", path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	keep := err == nil
	target := path
	if keep {
		if target, err = filepath.EvalSymlinks(path); err != nil {
			return err
		}
	} else if target, err = linkTarget(path); err != nil {
		return err
	}
	perm := fs.FileMode(0o666) // the umask applies
	if keep {
		perm = 0o600 // until the chmod: not more open than the file it replaces
	}
	f, err := createTempMode(filepath.Dir(target), "."+filepath.Base(target)+".", perm)
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if keep {
		if err := os.Chmod(f.Name(), fi.Mode().Perm()); err != nil {
			return err
		}
	}
	return os.Rename(f.Name(), target)
}

// createTempMode is os.CreateTemp in dir, with a name starting with
// prefix, created with perm less the umask (os.CreateTemp's is 0600).
func createTempMode(dir, prefix string, perm fs.FileMode) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("no unused temporary name in %s", dir)
}

// linkTarget is where a new file written at path goes: path itself, or,
// when path is a symbolic link to a file not there yet, the file the chain
// of links ends at.
func linkTarget(path string) (string, error) {
	for range 40 { // as many links as Linux follows
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) || err == nil && fi.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		to, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(path), to)
		}
		path = to
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// describe says where the events came from, for the page's subtitle.
func (sf *sourceFlags) describe(files []string) string {
	switch {
	case len(files) > 0:
		return "audit log " + strings.Join(files, ", ")
	case len(sf.nats) > 0:
		return "NATS " + strings.Join(sf.nats, ",")
	case len(sf.kafka) > 0:
		return "Kafka " + strings.Join(sf.kafka, ",")
	}
	return "herald events"
}
