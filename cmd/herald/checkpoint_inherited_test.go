package main

import (
	"strings"
	"testing"
)

// A command of herald run whose standard input is the /dev/null herald run
// itself was given (systemd's StandardInput=null, os/exec's nil Stdin, a
// daemon's) and which runs herald checkpoint put - with no producer has
// nothing to read: that is refused, and the progress saved stays, as
// for a closed one. It saved an empty checkpoint over the progress, that
// /dev/null passing for one given on purpose; the command's own
// </dev/null still saves an empty checkpoint.
func TestCheckpointPutInheritedDevNull(t *testing.T) {
	zkFl := zkFlags(t)
	g := uniq(t)
	child := `"$HERALD_BIN" checkpoint put step=41 || exit 9
"$HERALD_BIN" checkpoint put -; echo "inherited=$?"
"$HERALD_BIN" checkpoint get --raw "$HERALD_ELECTION"; echo " got=$?"
"$HERALD_BIN" checkpoint put - </dev/null; echo "null=$?"`
	// heraldRun gives herald run no standard input: os/exec's /dev/null,
	// read-only, as systemd's StandardInput=null is.
	out, stderr, code := heraldRun(t, nil, append(zkFl, "run", "--election", g, "--", "sh", "-c", child)...)
	if code != 0 {
		t.Fatalf("herald run: exit %d:\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"inherited=2", "step=41 got=0", "null=0"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in the output:\n%s%s", want, out, stderr)
		}
	}
	if want := "the /dev/null herald run (or lock) gave its command"; !strings.Contains(stderr, want) {
		t.Errorf("want %q on stderr:\n%s", want, stderr)
	}
}
