package zkserver

import (
	"bytes"
	"io"
	"sync"
)

// syncWriter serialises writes from several servers onto one writer.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// prefixWriter writes whole lines, each with a prefix, so output from
// several servers stays readable when interleaved.
type prefixWriter struct {
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	var out []byte
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		out = append(out, p.prefix...)
		out = append(out, p.buf[:i+1]...)
		p.buf = p.buf[i+1:]
	}
	if len(out) > 0 {
		// Output to the side writer is best effort; the log file is the record.
		p.w.Write(out)
	}
	return len(b), nil
}
