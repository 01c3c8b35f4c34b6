package audit

import (
	"compress/bzip2"
	"compress/gzip"
	"io"
	"os"
)

// wholeOf chooses, for the plain rotated file f named *name, between it
// and the same file compressed beside it (audit.log.000001.gz): both are
// there while gzip compresses it (the .gz partly written, the plain file
// whole) and while gunzip decompresses it (the plain file partly
// written, the .gz whole). The plain file was read, and while gunzip ran
// the events past what it had written were missing without a mark. A
// compressed stream that decompresses to its end without error (gzip's
// trailer checks the length and CRC, bzip2's its CRC) is whole: it is
// read, under its name, unless the plain file is longer than it (an
// older copy, gzip -k'd before the file was written on). Otherwise a
// plain file longer than what the stream decompresses to is what gzip
// reads from, whole. Neither shown
// whole (a cut .gz being decompressed), the plain file is read and
// partial is true: the reader marks the events after it as after a hole.
func wholeOf(f *os.File, name *string) (_ *os.File, partial bool, _ error) {
	if _, ext := cutReadableExt(*name); ext != "" {
		return f, false, nil
	}
	for _, ext := range readableExts {
		c, err := openRegular(*name + ext)
		if err != nil {
			continue // none beside it, the usual case
		}
		whole, n := decompressed(c)
		fi, err := f.Stat()
		if err != nil {
			c.Close()
			f.Close()
			return nil, false, err
		}
		// A whole stream shorter than the plain file is an older copy
		// (gzip -k, then the file written on), or pbzip2's streams
		// read between two of them, not gunzip's source.
		if whole && fi.Size() <= n {
			f.Close()
			*name += ext
			return c, false, nil
		}
		c.Close()
		return f, !whole && fi.Size() <= n, nil
	}
	return f, false, nil
}

// decompressed reports whether the compressed file c decompresses to its
// end without error, and how many bytes it decompressed to; c's offset
// stays where it was.
func decompressed(c *os.File) (bool, int64) {
	fi, err := c.Stat()
	if err != nil {
		return false, 0
	}
	sr := io.NewSectionReader(c, 0, fi.Size())
	magic := make([]byte, 3)
	m, _ := sr.ReadAt(magic, 0)
	var src io.Reader
	switch {
	case m >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		zr, err := gzip.NewReader(sr)
		if err != nil {
			return false, 0
		}
		src = zr
	case m == 3 && string(magic) == "BZh":
		src = bzip2.NewReader(sr)
	default:
		return false, 0 // not yet written (an empty .gz), or no such stream
	}
	n, err := io.Copy(io.Discard, src)
	return err == nil, n
}
