package elect

import (
	"fmt"
	"testing"
)

// TestRunNoteNames: a note's name says its session and its group's hash,
// and from the session's second note on, the count (runNoteName). A
// session's first note is named as every note was before the count, both
// ways readable while a group's copies are upgraded.
func TestRunNoteNames(t *testing.T) {
	g := "/jobs/nightly"
	h := fmt.Sprintf("%016x", groupHash(g))
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{runNoteName(0x0100abcd, g, 1), true},
		{runNoteName(0x0100abcd, g, 2), true},
		{runNoteName(0x0100abcd, g, 0xffffffff), true},
		{"run-000000000100abcd-" + h + "-cmd", true}, // the first notes
		{"run-000000000100abcd-" + h + "--cmd", false},
		{"run-000000000100abcd-" + h + "-123456789-cmd", false},
		{"run-100abcd-" + h + "-1-cmd", false},
		{"run-000000000100abcd-" + h + "-1-live", false},
		{"session-000000000100abcd-live", false},
	} {
		sid, gh, ok := parseRunNote(c.name)
		if ok != c.ok || ok && (sid != 0x0100abcd || gh != groupHash(g)) {
			t.Errorf("parseRunNote(%q) = %x, %x, %v; want ok %v", c.name, sid, gh, ok, c.ok)
		}
	}
}

// TestFirstRunNoteKeepsTheOldName: the session's first note is named
// without a count, as the herald before the count named every note and
// reads only; later notes are told apart by their count.
func TestFirstRunNoteKeepsTheOldName(t *testing.T) {
	g := "/jobs/nightly"
	old := fmt.Sprintf("run-%016x-%016x-cmd", uint64(0x0100abcd), groupHash(g))
	if got := runNoteName(0x0100abcd, g, 1); got != old {
		t.Errorf("first note %q, want %q", got, old)
	}
	if a, b := runNoteName(0x0100abcd, g, 2), runNoteName(0x0100abcd, g, 3); a == old || a == b {
		t.Errorf("later notes %q, %q: want names of their own", a, b)
	}
}
