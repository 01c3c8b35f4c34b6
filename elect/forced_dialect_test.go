package elect_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// TestForcedDialectWarnsOfAClientThatCannotReadIt: a dialect forced into a
// group whose Kazoo client cannot read it (by Kazoo's own rules) is the
// user's word, and is not refused; but it was taken in silence, and once
// that client queued behind herald's owner both owned until herald's
// stepped down. The wait now warns, naming the client and the dialect it
// reads, once; a forced dialect the client reads gives no warning.
func TestForcedDialectWarnsOfAClientThatCannotReadIt(t *testing.T) {
	ctx := ctxT(t, 20*time.Second)
	for _, tc := range []struct {
		dialect elect.Dialect
		warn    bool
	}{{elect.DialectCuratorLock, true}, {elect.DialectKazoo, false}} {
		t.Run(string(tc.dialect), func(t *testing.T) {
			group := groupPath(t)
			foreign(t, group, "4b3c2d1e0f4b3c2d1e0f4b3c2d1e0f11__lock__")
			var log lockedBuf
			s := session(t, sharedAddrs(t), elect.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
			l, err := elect.NewLock(s, group, elect.WithDialect(tc.dialect))
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := l.TryAcquire(ctx); !errors.Is(err, elect.ErrLocked) {
					t.Fatalf("TryAcquire behind a Kazoo client: %v; want ErrLocked", err)
				}
			}
			warned := strings.Count(log.String(), "the forced dialect names our node so that a client in the group cannot read it")
			switch {
			case tc.warn && (warned != 1 || !strings.Contains(log.String(), "Kazoo") || !strings.Contains(log.String(), "--dialect kazoo")):
				t.Fatalf("forced %s beside a Kazoo client: %d warnings, want one naming Kazoo and its dialect:\n%s", tc.dialect, warned, log.String())
			case !tc.warn && warned != 0:
				t.Fatalf("forced %s beside a Kazoo client, which reads it: warned:\n%s", tc.dialect, log.String())
			}
		})
	}
}
