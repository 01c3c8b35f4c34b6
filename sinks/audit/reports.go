package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/zkherald/herald/publish"
)

var _ publish.Reporter = (*Sink)(nil)

// LastReports reads the log (and its rotated files) for what it last
// recorded about each group: the owner of the newest event (or none),
// that event's zxid and its epoch. A bridge restarted on the same log uses
// it to tell, in each group's first snapshot, whether an owner may have
// come and gone while it was away. A log that does not exist yet reports nothing;
// malformed lines are passed over, as the history reader does. A snapshot
// from a new ensemble (publish.Event.NewEnsemble) is the last word of its
// group whatever zxids came before it.
func (s *Sink) LastReports(ctx context.Context) (map[string]publish.LastReport, error) {
	if _, err := os.Stat(s.path); errors.Is(err, os.ErrNotExist) {
		return map[string]publish.LastReport{}, nil
	}
	r, err := Open(s.path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out := map[string]publish.LastReport{}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e, err := r.Next()
		var bad *LineError
		switch {
		case errors.Is(err, io.EOF):
			return out, nil
		case errors.As(err, &bad):
			continue
		case err != nil:
			return nil, fmt.Errorf("audit: read %s for the last reports: %w", s.path, err)
		}
		rep := publish.LastReport{Zxid: e.Zxid, Recipe: e.Recipe, Epoch: e.Epoch}
		if last, ok := out[e.Group]; ok && e.Zxid < last.Zxid && !e.Restarts() {
			if e.Zxid != 0 {
				continue // a late copy of an older event
			}
			// Zxid 0: a bridge found the group gone, which names no
			// zxid; written after the group's other events, it is their
			// last word. Without it, an owner reported before would be
			// looked for, and published gone, at every start.
			rep.Zxid = last.Zxid
		}
		if e.Owner != nil {
			rep.Owner, rep.OwnerID, rep.Term = e.Owner.Node, e.Owner.ID, e.Term
		}
		out[e.Group] = rep
	}
}
