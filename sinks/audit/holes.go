package audit

import (
	"context"
	"errors"
	"io"
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
