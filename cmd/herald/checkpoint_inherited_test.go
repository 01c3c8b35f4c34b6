package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A command of herald run whose standard input is the /dev/null herald run
// itself was given (systemd's StandardInput=null, os/exec's nil Stdin, a
// daemon's, or a closed one the runtime filled) and which runs herald
// checkpoint put - with no producer has nothing to read: that is refused,
// and the progress saved stays, as for a closed one. It saved an empty
// checkpoint over the progress, that /dev/null passing for one given on
// purpose; the command's own </dev/null still saves an empty checkpoint,
// and a write to a closed one's read-write /dev/null still goes through.
func TestCheckpointPutInheritedDevNull(t *testing.T) {
	zkFl := zkFlags(t)
	child := `"$HERALD_BIN" checkpoint put step=41 || exit 9
"$HERALD_BIN" checkpoint put -; echo "inherited=$?"
"$HERALD_BIN" checkpoint get --raw "$HERALD_ELECTION"; echo " got=$?"
"$HERALD_BIN" checkpoint put - </dev/null; echo "null=$?"`
	for _, c := range []struct{ name, runner, extra string }{
		// os/exec's /dev/null, read-only, as systemd's StandardInput=null is
		{"devnull", `exec "$HERALD_BIN" "$@"`, ""},
		{"closed", `exec "$HERALD_BIN" "$@" <&-`, "\necho x >&0; echo \"wrote=$?\""},
	} {
		g := uniq(t) + "-" + c.name
		out, stderr, code := heraldVia(t, c.runner, append(zkFl, "run", "--election", g, "--", "sh", "-c", child+c.extra)...)
		if code != 0 {
			t.Fatalf("%s: herald run: exit %d:\n%s%s", c.name, code, out, stderr)
		}
		want := []string{"inherited=2", "step=41 got=0", "null=0"}
		if c.extra != "" {
			want = append(want, "wrote=0")
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: want %q in the output:\n%s%s", c.name, w, out, stderr)
			}
		}
		if w := "the /dev/null herald run (or lock) gave its command"; !strings.Contains(stderr, w) {
			t.Errorf("%s: want %q on stderr:\n%s", c.name, w, stderr)
		}
	}
}

// heraldVia runs herald with args through the shell script runner (which
// execs "$HERALD_BIN" "$@"), with no standard input, as heraldRun does.
func heraldVia(t *testing.T, runner string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", runner, "sh"}, args...)...)
	cmd.Env = append(os.Environ(), "HERALD_BIN="+heraldBin)
	return runToEnd(t, cmd, args)
}
