package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkherald/herald/internal/timeline"
	"github.com/zkherald/herald/publish"
)

// writeTimeline draws events as a timeline into an HTML page and/or an SVG
// file. Each file is written whole, through a temporary file beside it, so
// a failed write leaves no half a page.
func (a *app) writeTimeline(events []publish.Event, htmlOut, svgOut, source string) error {
	chart := timeline.Build(events, lastEventTime(events), nil)
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
		if err := writeWhole(out.path, buf.Bytes()); err != nil {
			return fmt.Errorf("%s %s: %w; give a file in a directory you can write", out.flag, out.path, err)
		}
		fmt.Fprintf(a.stdout, "wrote %s: %d tenures of %d groups\n", out.path, tenures, len(chart.Lines))
	}
	return nil
}

// lastEventTime is when the last event happened (the chart ends there, so
// a file drawn later does not stretch to the time it was drawn).
func lastEventTime(events []publish.Event) time.Time {
	var last time.Time
	for _, e := range events {
		if e.Time.After(last) {
			last = e.Time
		}
	}
	if last.IsZero() {
		return time.Now()
	}
	return last
}

// writeWhole writes data to path through a temporary file and a rename.
func writeWhole(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
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
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
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
