package main

import (
	"strconv"
	"strings"
	"testing"
)

// A checkpoint too big for an environment variable (Linux takes at most
// 128 KiB, name and all) does not keep the next leader's command from
// starting: it starts with HERALD_CHECKPOINT empty, the checkpoint's term,
// and HERALD_CHECKPOINT_ERROR saying to read it with checkpoint get, which
// does. checkpoint put saves it with a warning; one that fits exactly is
// passed as before.
func TestRunHandsOverACheckpointTooBigForTheEnvironment(t *testing.T) {
	zkFl := zkFlags(t)
	for _, tc := range []struct {
		n   int
		fit bool
	}{{maxEnvCheckpoint, true}, {maxEnvCheckpoint + 1, false}, {200000, false}} {
		g := uniq(t)
		put := `head -c ` + itoa(tc.n) + ` /dev/zero | tr '\0' a | "$HERALD_BIN" checkpoint put -`
		_, stderr, code := heraldRun(t, nil, append(zkFl, "run", "--election", g, "--id", "a", "--", "sh", "-c", put)...)
		if warned := strings.Contains(stderr, "too big to pass in the environment"); code != 0 || warned == tc.fit {
			t.Fatalf("checkpoint put of %d bytes: exit %d, want 0 with a warning only when it does not fit (%d): %s", tc.n, code, maxEnvCheckpoint, stderr)
		}
		child := `echo "started len=${#HERALD_CHECKPOINT} term=[$HERALD_CHECKPOINT_TERM] err=[$HERALD_CHECKPOINT_ERROR]"; echo "got=$("$HERALD_BIN" checkpoint get | tr -d '\n' | wc -c)"`
		out, stderr, code := heraldRun(t, nil, append(zkFl, "run", "--election", g, "--id", "b", "--", "sh", "-c", child)...)
		want := "started len=" + itoa(tc.n) + " term=["
		if !tc.fit {
			want = "started len=0 term=["
		}
		if code != 0 || !strings.Contains(out, want) || strings.Contains(out, "term=[]") || !strings.Contains(out, "got="+itoa(tc.n)+"\n") {
			t.Fatalf("run over a checkpoint of %d bytes: exit %d, want the command started with %q and checkpoint get reading it all:\n%s%s", tc.n, code, want, out, stderr)
		}
		if tooBig := strings.Contains(out, "is too big to pass in HERALD_CHECKPOINT") && strings.Contains(out, "read it with: herald checkpoint get"); tooBig == tc.fit {
			t.Fatalf("run over a checkpoint of %d bytes: HERALD_CHECKPOINT_ERROR should say it is too big only when it does not fit:\n%s", tc.n, out)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
