package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/publish"
)

// TestHistoryCancelledDuringItsExtraReadsStops: history was cancelled
// (Ctrl-C) once it had read the events, as it read the files beside the
// log to judge its open tenure: a file another rotation named
// (audit.log.20261129), read for the owners it may have ended, and a log
// with a hole, read whole once more for the owners the missing file may
// have ended. Those reads ignored the cancel and went on to their end,
// and history printed its rows. It stops now, with an error naming what
// it was reading, and prints nothing.
func TestHistoryCancelledDuringItsExtraReadsStops(t *testing.T) {
	g, path, mk := newStory(t)
	al := participant("alpha", 1)
	as := rotatingSink(t, path)
	for i := range int64(4) {
		write(t, as, mk(publish.LeaderReady, al, nil, 10, 10+i, false))
	}
	if err := os.Remove(path + ".000002"); err != nil {
		t.Fatal(err)
	}
	withHole := path
	_, dated, _ := newStory(t)
	openLog(t, dated, mk(publish.LeaderElected, al, nil, 10, 10, false))
	if err := os.WriteFile(dated+".20261129", nil, 0o640); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ log, reading string }{{dated, dated + ".20261129"}, {withHole, "once more"}} {
		a, out, _ := historyApp()
		ctx, cancel := context.WithCancel(context.Background())
		began := false
		auditJudgeBegun = func() { began = true; cancel() }
		t.Cleanup(func() { auditJudgeBegun = nil })
		start := time.Now()
		err := a.history(ctx, &sourceFlags{}, []string{c.log}, g, defaultHeldEvents, false, window{})
		cancel()
		if !began {
			t.Fatalf("history of %s never judged its open tenure", c.log)
		}
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), c.reading) {
			t.Errorf("history of %s cancelled during its extra read: %v, want context canceled, saying it was reading %s", c.log, err, c.reading)
		}
		if out.Len() > 0 {
			t.Errorf("history of %s cancelled printed:\n%s", c.log, out)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("history of %s took %v to stop", c.log, d)
		}
	}
}
