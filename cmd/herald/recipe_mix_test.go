package main

import (
	"strings"
	"testing"
)

// herald lock on an election's group, and herald run on a lock's, warn
// once, naming what the group holds and --mixed-recipe, which joins it
// without a word; both went ahead in silence, and the group, which keeps
// its recipe, reported the lock's holders as leaders (or the reverse). A
// group of the same recipe, or a new one, gets no warning.
func TestRunAndLockWarnOfTheOtherRecipe(t *testing.T) {
	zkFl := zkFlags(t)
	const warning = "joins a group that holds"
	for _, tc := range []struct {
		first, then, flag, want string
	}{
		{"run", "lock", "--lock", "holds an election"},
		{"lock", "run", "--election", "holds a lock"},
	} {
		g := uniq(t)
		firstFlag := map[string]string{"run": "--election", "lock": "--lock"}[tc.first]
		if _, stderr, code := heraldRun(t, nil, append(zkFl, tc.first, firstFlag, g, "--", "true")...); code != 0 || strings.Contains(stderr, warning) {
			t.Fatalf("herald %s on a new group: exit %d, want 0 and no warning:\n%s", tc.first, code, stderr)
		}
		_, stderr, code := heraldRun(t, nil, append(zkFl, tc.then, tc.flag, g, "--", "true")...)
		if code != 0 || strings.Count(stderr, warning) != 1 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "--mixed-recipe") {
			t.Errorf("herald %s on a group herald %s made: exit %d, want 0 with one warning saying it %s and naming --mixed-recipe:\n%s", tc.then, tc.first, code, tc.want, stderr)
		}
		_, stderr, code = heraldRun(t, nil, append(zkFl, tc.then, tc.flag, g, "--mixed-recipe", "--", "true")...)
		if code != 0 || strings.Contains(stderr, warning) {
			t.Errorf("herald %s --mixed-recipe on a group herald %s made: exit %d, want 0 and no warning:\n%s", tc.then, tc.first, code, stderr)
		}
		if _, stderr, code := heraldRun(t, nil, append(zkFl, tc.first, firstFlag, g, "--", "true")...); code != 0 || strings.Contains(stderr, warning) {
			t.Errorf("herald %s on its own recipe's group: exit %d, want 0 and no warning:\n%s", tc.first, code, stderr)
		}
	}
}
