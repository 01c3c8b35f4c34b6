package publish

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Errors of the pipeline, matched with errors.Is.
var (
	// ErrClosed is returned by Publish after Close (or after Run's context
	// ended): the pipeline no longer accepts events.
	ErrClosed = errors.New("publish: pipeline is closed")
	// ErrRunning is returned by a second call to Run.
	ErrRunning = errors.New("publish: pipeline is already running")
	// ErrBadOption wraps every invalid option passed to New or NewFollower.
	ErrBadOption = errors.New("publish: bad option")
	// ErrUndelivered is wrapped by the error Close returns when its context
	// ended before every sink acknowledged every event.
	ErrUndelivered = errors.New("publish: events left undelivered")
	// ErrSinkConfig is wrapped by a sink's error that no retry can mend:
	// the sink is set up in a way its server refuses (a bridge stops
	// trying at once and says so).
	ErrSinkConfig = errors.New("publish: the sink's settings cannot work with its server")
)

// UndeliveredError says how many events each sink had not acknowledged when
// Close gave up. It wraps ErrUndelivered.
type UndeliveredError struct {
	// Left is the number of events not acknowledged, by sink name.
	Left map[string]int
	// Stuck names the sinks whose worker did not stop when asked (their
	// Write or Connect ignores its context).
	Stuck []string
}

func (e *UndeliveredError) Error() string {
	names := make([]string, 0, len(e.Left))
	total := 0
	for n, c := range e.Left {
		names = append(names, fmt.Sprintf("%s=%d", n, c))
		total += c
	}
	sort.Strings(names)
	msg := fmt.Sprintf("%v: %d events (%s); give Close a longer deadline or fix the sinks", ErrUndelivered, total, strings.Join(names, ", "))
	if len(e.Stuck) > 0 {
		msg += "; sinks ignoring cancellation: " + strings.Join(e.Stuck, ", ")
	}
	return msg
}

func (e *UndeliveredError) Unwrap() error { return ErrUndelivered }
