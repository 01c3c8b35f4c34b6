package elect

import (
	"slices"
	"strings"
	"testing"
)

// TestHazard: which mixes of names let two clients of a group each believe
// they own, following how each client reads the others' names.
func TestHazard(t *testing.T) {
	herald := func(d Dialect, r Recipe, seq int32) string {
		return nodeBase(d, heraldID{session: 0x1000_0000_0000_0042, nonce: uint32(seq) + 1, recipe: r}, "lock-") + FormatSequence(seq)
	}
	curator := func(lockName string, seq int32) string {
		return "_c_5b3e1f4a-1c2d-4e5f-8a9b-0c1d2e3f4a5b-" + lockName + FormatSequence(seq)
	}
	gozk := func(seq int32) string { return "_c_0123456789abcdef0123456789abcdef-lock-" + FormatSequence(seq) }
	kazoo := func(seq int32) string { return "9f8e7d6c5b4a39281706f5e4d3c2b1a0__lock__" + FormatSequence(seq) }
	for _, c := range []struct {
		name  string
		queue []string // lowest first
		want  []string // substrings of the hazard; none: no hazard
	}{
		{"herald lock, then Kazoo", []string{herald(DialectCuratorLock, RecipeLock, 0), kazoo(1)}, []string{"Kazoo", "herald's node", "--dialect kazoo"}},
		{"Kazoo, then herald", []string{kazoo(0), herald(DialectCuratorLock, RecipeLock, 1)}, nil},
		{"herald in Kazoo's dialect, then Kazoo", []string{herald(DialectKazoo, RecipeLock, 0), kazoo(1)}, nil},
		{"Curator mutex, then Kazoo", []string{curator("lock-", 0), kazoo(1)}, []string{"Kazoo", "groups of their own"}},
		{"Kazoo, then Curator mutex", []string{kazoo(0), curator("lock-", 1)}, []string{"Curator InterProcessMutex", "groups of their own"}},
		{"Kazoo, then go-zookeeper (which reads Kazoo's names)", []string{kazoo(0), gozk(1)}, nil},
		{"go-zookeeper, then Kazoo", []string{gozk(0), kazoo(1)}, []string{"Kazoo"}},
		{"classic candidate, then Curator latch", []string{"candidate-0x1a2b_" + FormatSequence(0), curator("latch-", 1)}, []string{"LeaderLatch", "candidate-0x1a2b_0000000000"}},
		{"classic lock, Curator mutex, go-zookeeper", []string{"lock-" + FormatSequence(0), curator("lock-", 1), gozk(2)}, nil},
		{"herald election, then Curator mutex", []string{herald(DialectCuratorLatch, RecipeElection, 0), curator("lock-", 1)}, []string{"--dialect curator-lock"}},
		{"herald lock, then Curator latch", []string{herald(DialectCuratorLock, RecipeLock, 0), curator("latch-", 1)}, []string{"--dialect curator-latch"}},
		{"herald lock, then Curator mutex and go-zookeeper", []string{herald(DialectCuratorLock, RecipeLock, 0), curator("lock-", 1), gozk(2)}, nil},
		{"herald classic names, then go-zookeeper", []string{herald(DialectClassic, RecipeLock, 0), gozk(1)}, []string{"go-zookeeper"}},
		{"herald only", []string{herald(DialectCuratorLatch, RecipeElection, 0), herald(DialectClassic, RecipeElection, 1)}, nil},
		{"herald lock, then a Curator read lock", []string{herald(DialectCuratorLock, RecipeLock, 0), curator("__READ__", 1)}, []string{"Curator __READ", "herald's node", "groups of their own"}},
		{"Curator read and write locks", []string{curator("__READ__", 0), curator("__WRIT__", 1), curator("__READ__", 2)}, nil},
		{"Curator semaphore leases", []string{curator("lease-", 0), curator("lease-", 1)}, nil},
		{"herald election, then a Curator semaphore lease", []string{herald(DialectCuratorLatch, RecipeElection, 0), curator("lease-", 1)}, []string{"Curator lease", "groups of their own"}},
		{"after the counter's wrap: herald, then Curator mutex", []string{herald(DialectCuratorLock, RecipeLock, -7), curator("lock-", -6)}, []string{"went past 2147483647", curator("lock-", -6), "new path"}},
		{"across the wrap: go-zookeeper, then herald", []string{gozk(1<<31 - 1), herald(DialectCuratorLock, RecipeLock, -1<<31)}, []string{"went past 2147483647", gozk(1<<31 - 1)}},
		{"after the wrap: herald only", []string{herald(DialectCuratorLock, RecipeLock, -7), herald(DialectClassic, RecipeLock, -6)}, nil},
		{"a foreign client alone after the wrap", []string{curator("lock-", -6)}, nil},
		{"empty", nil, nil},
	} {
		got, node := hazardBy(parseChildren(c.queue, 100))
		if (got == "") != (node == "") || node != "" && !strings.Contains(got, node) {
			t.Errorf("%s: hazard %q names node %q", c.name, got, node)
		}
		switch {
		case len(c.want) == 0 && got != "":
			t.Errorf("%s: hazard %q; want none", c.name, got)
		case len(c.want) > 0 && got == "":
			t.Errorf("%s: no hazard; want one naming %q", c.name, c.want)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: hazard %q does not say %q", c.name, got, w)
			}
		}
	}
}

// TestBlindTo: which newcomers make an owner step
// down: those that cannot read its node and would own beside it, not those
// that read it, nor go-zookeeper's Lock, which fails on a name it cannot
// parse instead of owning.
func TestBlindTo(t *testing.T) {
	herald := func(d Dialect, r Recipe) string {
		return nodeBase(d, heraldID{session: 0x1000_0000_0000_0042, nonce: 7, recipe: r}, "lock-") + FormatSequence(3)
	}
	curator := func(lockName string) string {
		return "_c_5b3e1f4a-1c2d-4e5f-8a9b-0c1d2e3f4a5b-" + lockName + FormatSequence(9)
	}
	gozk := "_c_0123456789abcdef0123456789abcdef-lock-" + FormatSequence(10)
	kazoo := "9f8e7d6c5b4a39281706f5e4d3c2b1a0__lock__" + FormatSequence(11)
	for _, c := range []struct {
		name   string
		ours   string
		others []string
		want   string // substring of the client named; "" for none
	}{
		{"Kazoo beside the lock default", herald(DialectCuratorLock, RecipeLock), []string{kazoo}, "Kazoo"},
		{"Kazoo beside Kazoo's dialect", herald(DialectKazoo, RecipeLock), []string{kazoo}, ""},
		{"Curator latch beside the lock default", herald(DialectCuratorLock, RecipeLock), []string{curator("latch-")}, "LeaderLatch"},
		{"Curator mutex beside the election default", herald(DialectCuratorLatch, RecipeElection), []string{curator("lock-")}, "InterProcessMutex"},
		{"Curator mutex and go-zookeeper beside the lock default", herald(DialectCuratorLock, RecipeLock), []string{curator("lock-"), gozk}, ""},
		{"go-zookeeper beside the election default (it fails, it does not own)", herald(DialectCuratorLatch, RecipeElection), []string{gozk}, ""},
		{"classic and herald nodes", herald(DialectClassic, RecipeLock), []string{"lock-" + FormatSequence(12), herald(DialectKazoo, RecipeLock)}, ""},
		{"a foreign reader behind an unreadable name", herald(DialectCuratorLock, RecipeLock), []string{gozk, kazoo}, "Kazoo"},
		{"alone", herald(DialectCuratorLock, RecipeLock), nil, ""},
		{"a Curator write lock, which reads no name of herald's", herald(DialectKazoo, RecipeLock), []string{curator("__WRIT__")}, "Curator __WRIT"},
		{"an unknown protected recipe", herald(DialectCuratorLock, RecipeLock), []string{"_c_0123456789abcdef0123456789abcdef-job-" + FormatSequence(13)}, "unknown recipe"},
	} {
		n, node, _ := blindTo(append([]string{c.ours}, c.others...), c.ours, nil)
		got := n.client
		if got != "" && !slices.Contains(c.others, node) {
			t.Errorf("%s: blindTo names node %q, not one of %v", c.name, node, c.others)
		}
		switch {
		case c.want == "" && got != "":
			t.Errorf("%s: blindTo names %q; want none", c.name, got)
		case c.want != "" && !strings.Contains(got, c.want):
			t.Errorf("%s: blindTo names %q; want a client named %q", c.name, got, c.want)
		}
	}
}
