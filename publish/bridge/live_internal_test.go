package bridge

import (
	"fmt"
	"testing"
)

// The page's change log: each group once, in order; a reader too far
// behind, or holding a number from before a restart, is told to reload.
func TestLiveLog(t *testing.T) {
	l := newLive()
	l.changed("/a")
	l.changed("/b")
	l.changed("/a")
	groups, next, reload, _ := l.since(0)
	if fmt.Sprint(groups) != "[/a /b]" || next != 3 || reload {
		t.Fatalf("since(0) = %v, %d, %v; want [/a /b], 3, false", groups, next, reload)
	}
	if groups, _, reload, _ := l.since(3); len(groups) != 0 || reload {
		t.Fatalf("since(3) = %v, %v; want nothing", groups, reload)
	}
	if _, _, reload, _ := l.since(99); !reload {
		t.Fatal("a number from before a restart must reload")
	}
	for i := range liveLogSize * 2 {
		l.changed(fmt.Sprint("/g", i))
	}
	if _, _, reload, _ := l.since(3); !reload {
		t.Fatal("a reader behind the log must reload")
	}
	l.changed("")
	if _, _, reload, _ := l.since(l.current() - 1); !reload {
		t.Fatal(`changed("") must make readers reload`)
	}
}
