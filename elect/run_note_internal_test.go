package elect

import (
	"fmt"
	"testing"
)

// TestRunNoteNames: a note's name says its session and its group's hash,
// with the count of the session's notes (runNoteName), or without it, as
// the first notes were named: a copy of that herald may run beside this
// one while a group's copies are upgraded, and its notes must keep ours
// waiting as ours do.
func TestRunNoteNames(t *testing.T) {
	g := "/jobs/nightly"
	h := fmt.Sprintf("%016x", groupHash(g))
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{runNoteName(0x0100abcd, g, 1), true},
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
