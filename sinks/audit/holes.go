package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// EndedBeforeLastHole names the groups of the log at path whose last event
// lies before its last hole (rotated files missing, MissingRotated): the
// missing file may hold their later changes, the loss of the owner the
// events read leave holding, so its bridge's heartbeat, which says every
// change was stored, confirms nothing of theirs. Nil, the log not read,
// when it has no hole.
func EndedBeforeLastHole(ctx context.Context, path string) (map[string]bool, error) {
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
	lastIn := map[string]int{} // the file each group's last event was read in
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		line, err := r.nextLine()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		g, ok := skimGroup(line)
		if !ok {
			e, err := r.decode(line)
			if err != nil {
				continue // malformed: the read of the events warns of it
			}
			g = []byte(e.Group)
		}
		lastIn[string(g)] = r.i
	}
	ended := map[string]bool{}
	for g, i := range lastIn {
		if i < lastHole {
			ended[g] = true
		}
	}
	return ended, nil
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
