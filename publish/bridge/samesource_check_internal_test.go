package bridge

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/heraldtest"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestSourcesRootCheckEndedWithItsSessionIsNoWarning: the check of the
// sources root after the claim warned that it could not be made
// whenever its session ended (or the bridge stopped) during the check:
// a warning at every session's loss, of a check the next session's
// claim makes again.
func TestSourcesRootCheckEndedWithItsSessionIsNoWarning(t *testing.T) {
	s := heraldtest.Session(t, zktest.Shared(t).Addrs(), elect.WithDigestAuth("bridge:pw"))
	var log strings.Builder
	b := &Bridge{log: slog.New(slog.NewTextHandler(&log, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the session is gone
	b.checkSourcesRoot(ctx, s)
	if strings.Contains(log.String(), "level=WARN") {
		t.Errorf("warned of a check its session's end cut short:\n%s", log.String())
	}
}
