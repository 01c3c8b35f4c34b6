package audit

import (
	"errors"
	"fmt"
)

var (
	// ErrClosed is returned by Write after Close, or before Connect.
	ErrClosed = errors.New("audit: log is not open")
	// ErrMalformed is wrapped by every *LineError.
	ErrMalformed = errors.New("audit: malformed line")
	// ErrBadOption is wrapped by errors from options.
	ErrBadOption = errors.New("audit: bad option")
	// ErrNotAuditLog is returned by Connect for a file that holds no
	// complete event and a line herald cannot have begun: another file
	// given as the log (a typo in --audit) was cut to nothing as a torn
	// tail.
	ErrNotAuditLog = errors.New("audit: not an audit log")
)

// LineError is a line of the log that is not a herald event.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("audit: %s:%d: malformed line: %v", e.File, e.Line, e.Err)
}

// Unwrap lets errors.Is match ErrMalformed and the cause.
func (e *LineError) Unwrap() []error { return []error{ErrMalformed, e.Err} }
