package audit

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Spool keeps rows of a history in a temporary file rather than in memory,
// and writes them, once all are in, as WriteTable's table or as a JSON
// array: a year's history of a fleet has millions of rows, and the table's
// columns are as wide as their widest cell, known only at the end.
type Spool struct {
	f      *os.File
	w      *bufio.Writer
	asJSON bool
	table  tableOut
	rows   int
	buf    []byte
}

// NewSpool makes a spool in a new file of the temporary directory (the
// file is removed by Close): of JSON rows (each tenure's MarshalJSON)
// when asJSON, else of table rows.
func NewSpool(asJSON bool) (*Spool, error) {
	f, err := os.CreateTemp("", "herald-history-*")
	if err != nil {
		return nil, fmt.Errorf("audit: a file to hold the history's rows in: %w (set TMPDIR to a directory with room)", err)
	}
	return &Spool{f: f, w: bufio.NewWriterSize(f, 64<<10), asJSON: asJSON}, nil
}

// Add appends rows.
func (s *Spool) Add(ts ...Tenure) error {
	for _, t := range ts {
		if s.asJSON {
			b, err := json.Marshal(t)
			if err != nil {
				return err
			}
			s.record(b)
		} else {
			c := tableRow(t)
			s.table.measure(c)
			for _, cell := range c {
				s.record([]byte(cell))
			}
		}
		s.rows++
	}
	return s.failed()
}

// record writes b with its length before it.
func (s *Spool) record(b []byte) {
	s.buf = binary.AppendUvarint(s.buf[:0], uint64(len(b)))
	s.w.Write(s.buf)
	s.w.Write(b)
}

// failed is the first error writing the file, with its name.
func (s *Spool) failed() error {
	if _, err := s.w.Write(nil); err != nil {
		return fmt.Errorf("audit: write the history's rows to %s: %w (set TMPDIR to a directory with room)", s.f.Name(), err)
	}
	return nil
}

// Rows is how many rows were added.
func (s *Spool) Rows() int { return s.rows }

// WriteTo writes the rows added, in their order, to w: the table with its
// header, or a JSON array on one line, as encoding/json's Encoder writes
// a slice of tenures.
func (s *Spool) WriteTo(w io.Writer) (int64, error) {
	if err := s.w.Flush(); err != nil {
		return 0, fmt.Errorf("audit: write the history's rows to %s: %w (set TMPDIR to a directory with room)", s.f.Name(), err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("audit: read back the history's rows from %s: %w", s.f.Name(), err)
	}
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 64<<10)
	err := s.copy(bufio.NewReaderSize(s.f, 64<<10), bw)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return cw.n, err
}

// copy reads the records back from r and writes them to bw.
func (s *Spool) copy(r *bufio.Reader, bw *bufio.Writer) error {
	next := func() ([]byte, error) {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, err
		}
		b := make([]byte, n)
		_, err = io.ReadFull(r, b)
		return b, err
	}
	bad := func(err error) error {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("audit: read back the history's rows from %s: %w", s.f.Name(), err)
	}
	if s.asJSON {
		bw.WriteByte('[')
		for i := range s.rows {
			b, err := next()
			if err != nil {
				return bad(err)
			}
			if i > 0 {
				bw.WriteByte(',')
			}
			bw.Write(b)
		}
		bw.WriteString("]\n")
		return nil
	}
	s.table.write(bw, tableHeader)
	for range s.rows {
		var c tableCells
		for i := range c {
			b, err := next()
			if err != nil {
				return bad(err)
			}
			c[i] = string(b)
		}
		s.table.write(bw, c)
	}
	return nil
}

// Close removes the file.
func (s *Spool) Close() error {
	return errors.Join(s.f.Close(), os.Remove(s.f.Name()))
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
