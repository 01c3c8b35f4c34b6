package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// EndedBeforeLastHole tells, of each group of the log at path whose last
// event lies before its last hole (rotated files missing,
// MissingRotated), when the events read after that hole begin: the
// missing file may hold later changes of the group, the loss of the owner
// the events read leave holding, up to then, so its bridge's heartbeat,
// which says every change was stored, confirms no owner of the group not
// seen after it. With no event after the hole, a time after every event.
// Nil, the log not read, when it has no hole. A group another log saw
// after the hole was unconfirmed too, when it held no end of its owner
// (TestHistoryConfirmsAnOwnerSeenAfterAHoleInAnotherLog).
func EndedBeforeLastHole(ctx context.Context, path string) (map[string]time.Time, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	lastHole := -1
	for i, h := range r.holes {
		if h {
			lastHole = i
		}
	}
	if lastHole < 0 {
		return nil, nil
	}
	lastIn, after, err := r.lastFiles(ctx, lastHole)
	if err != nil {
		return nil, err
	}
	ended := map[string]time.Time{}
	for g, i := range lastIn {
		if i < lastHole {
			ended[g] = after
		}
	}
	return ended, nil
}

// afterEvery is a time after every event's.
var afterEvery = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// lastFiles reads the rest of r: the file each group's last event is
// read in, and the time of the first event read in file hole or after
// (afterEvery when there is none).
func (r *Reader) lastFiles(ctx context.Context, hole int) (map[string]int, time.Time, error) {
	lastIn := map[string]int{}
	after := afterEvery
	for {
		if err := ctx.Err(); err != nil {
			return nil, after, err
		}
		line, err := r.nextLine()
		if errors.Is(err, io.EOF) {
			return lastIn, after, nil
		}
		if err != nil {
			return nil, after, err
		}
		g, ok := skimGroup(line)
		if !ok || (r.i >= hole && after == afterEvery) {
			e, err := r.decode(line)
			if err != nil {
				continue // malformed: the read of the events warns of it
			}
			g = []byte(e.Group)
			if r.i >= hole && after == afterEvery {
				after = e.Time
			}
		}
		lastIn[string(g)] = r.i
	}
}

// LastEvents is the time of each group's last event in the log at path
// (a date-named file beside a log, which history does not read with it):
// an owner seen after it is past what the file may hold of its group, and
// one whose group it holds nothing of cannot have ended in it. A line
// that is no event, or one cut short, is an error: its group is unknown.
func LastEvents(ctx context.Context, path string) (map[string]time.Time, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	last := map[string]time.Time{}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if e.Time.After(last[e.Group]) {
			last[e.Group] = e.Time
		}
	}
	if r.Torn() > 0 {
		return nil, fmt.Errorf("audit: %s ends in a line cut short", path)
	}
	return last, nil
}
