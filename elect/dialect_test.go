package elect

import (
	"errors"
	"strings"
	"testing"
)

// Names as each client writes them (see RECIPES-IN-THE-WILD.md): what each
// imposes on the others, and the dialect herald chooses beside them.
const (
	curatorMutex = "_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-lock-0000000001"
	curatorLatch = "_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-latch-0000000002"
	curatorRW    = "_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-__WRIT__0000000003"
	gozkLock     = "_c_0123456789abcdef0123456789abcdef-lock-0000000004"
	kazooLock    = "4b3c2d1e0f4b3c2d1e0f4b3c2d1e0f11__lock__0000000005"
	kazooRead    = "4b3c2d1e0f4b3c2d1e0f4b3c2d1e0f11__rlock__0000000006"
	classicN     = "n_0000000007"
	classicCand  = "candidate-72057738101588070_0000000008"
	kazooLease   = "9f1c2b3a4d5e4f60a1b2c3d4e5f60718" // Kazoo Semaphore: uuid4().hex, no sequence
)

func TestGroupDialect(t *testing.T) {
	herald := nodeBase(DialectKazoo, heraldID{session: 9, nonce: 1, recipe: RecipeLock}, "lock-") + "0000000009"
	cases := []struct {
		recipe   Recipe
		children []string
		want     Dialect
		refused  string // a word the refusal must name
	}{
		{RecipeLock, nil, DialectCuratorLock, ""},
		{RecipeElection, nil, DialectCuratorLatch, ""},
		{RecipeElection, []string{OfficeNode, CheckpointNode}, DialectCuratorLatch, ""},
		{RecipeLock, []string{classicN, classicCand}, DialectCuratorLock, ""},
		{RecipeElection, []string{curatorMutex}, DialectCuratorLock, ""}, // LeaderSelector
		{RecipeLock, []string{gozkLock, curatorMutex}, DialectCuratorLock, ""},
		{RecipeLock, []string{curatorLatch}, DialectCuratorLatch, ""},
		{RecipeElection, []string{kazooLock, kazooRead}, DialectKazoo, ""},
		{RecipeLock, []string{herald}, DialectCuratorLock, ""}, // herald imposes nothing
		{RecipeLock, []string{kazooLock, curatorMutex}, "", "Kazoo"},
		{RecipeLock, []string{gozkLock, kazooLock}, "", "go-zookeeper"},
		{RecipeElection, []string{curatorLatch, curatorMutex}, "", "LeaderLatch"},
		{RecipeLock, []string{curatorRW}, "", "__WRIT__"},
		{RecipeLock, []string{kazooLease}, "", "Kazoo Semaphore"},
		{RecipeElection, []string{kazooLock, kazooLease}, "", "Kazoo Semaphore"},
		// Any other name without a sequence may be a lock's ephemeral node:
		// refused by its name, then passed over unless a session holds it.
		{RecipeLock, []string{"lock"}, "", "without a sequence"},
		{RecipeLock, []string{"leases"}, "", "InterProcessSemaphoreV2"}, // Curator's semaphore at this path
	}
	for _, c := range cases {
		got, err := groupDialect(c.recipe, c.children)
		if c.refused != "" {
			if !errors.Is(err, ErrUnsafeGroup) || !strings.Contains(err.Error(), c.refused) {
				t.Errorf("groupDialect(%s, %v) = %q, %v; want ErrUnsafeGroup naming %s", c.recipe, c.children, got, err, c.refused)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("groupDialect(%s, %v) = %q, %v; want %s", c.recipe, c.children, got, err, c.want)
		}
	}
}

// What each client reads of herald's name in each dialect: the sequence
// it would order the node by, computed the way that client's code does.
func TestForeignClientsOrderHeraldNames(t *testing.T) {
	id := heraldID{session: 0x0100016aab610005, nonce: 7, recipe: RecipeLock}
	const seq = "0000000042"
	afterLast := func(name, lockName string) string { // Curator's fixForSorting
		if i := strings.LastIndex(name, lockName); i >= 0 {
			return name[i+len(lockName):]
		}
		return name
	}
	gozk := func(name string) string { // go-zookeeper's parseSeq
		parts := strings.Split(name, "lock-")
		if len(parts) == 1 {
			parts = strings.Split(name, "__")
		}
		return parts[len(parts)-1]
	}
	kazoo := func(name string) string { // Kazoo 2.8's contender regex
		for _, p := range []string{"__lock__", "__rlock__"} {
			if i := strings.LastIndex(name, p); i >= 0 && len(name)-i-len(p) == 10 {
				return name[i+len(p):]
			}
		}
		return "invisible"
	}
	lock := nodeBase(DialectCuratorLock, id, "lock-") + seq
	latch := nodeBase(DialectCuratorLatch, id, "candidate-") + seq
	kz := nodeBase(DialectKazoo, id, "lock-") + seq
	for what, got := range map[string]string{
		"Curator mutex reads " + lock:  afterLast(lock, "lock-"),
		"go-zookeeper reads " + lock:   gozk(lock),
		"Curator latch reads " + latch: afterLast(latch, "latch-"),
		"Kazoo reads " + kz:            kazoo(kz),
		"go-zookeeper reads " + kz:     gozk(kz),
	} {
		if got != seq {
			t.Errorf("%s as %q, want %q", what, got, seq)
		}
	}
	if !strings.HasPrefix(lock, "_c_") || len(lock) != 3+36+1+len("lock-")+10 {
		t.Errorf("%q is not a Curator protected name", lock)
	}
}

func TestParseDialect(t *testing.T) {
	for _, d := range Dialects {
		if got, err := ParseDialect(string(d)); err != nil || got != d {
			t.Errorf("ParseDialect(%q) = %q, %v", d, got, err)
		}
	}
	if _, err := ParseDialect("zookeeper"); err == nil || !strings.Contains(err.Error(), "curator-lock") {
		t.Errorf("ParseDialect of an unknown name: %v; want an error listing the dialects", err)
	}
}

func TestRecipeByRule(t *testing.T) {
	for name, want := range map[string]Recipe{
		curatorMutex: RecipeLock, curatorLatch: RecipeElection, gozkLock: RecipeLock,
		kazooLock: RecipeLock, classicN: RecipeElection, classicCand: RecipeElection,
		"lock-0000000001": RecipeLock, "x-72057738101588070-0000000013": RecipeElection,
		"le_0000000001": "",
		// Curator's read-write lock and semaphore: locks, as its mutex
		"_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-__WRIT__0000000001":                                  RecipeLock,
		"_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-__READ__0000000002":                                  RecipeLock,
		"_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-lease-0000000003":                                    RecipeLock,
		nodeBase(DialectCuratorLock, heraldID{session: 1, recipe: RecipeElection}, "") + "0000000001": RecipeElection,
		nodeBase(DialectCuratorLatch, heraldID{session: 1, recipe: RecipeLock}, "") + "0000000001":    RecipeLock,
	} {
		if info, _ := ParseName(name); info.Recipe != want {
			t.Errorf("recipe of %q = %q, want %q", name, info.Recipe, want)
		}
	}
}

func TestRecipeRules(t *testing.T) {
	rr := RecipeRules{
		"/kazoo/election":     RecipeElection,
		"/services/*/leader":  RecipeElection,
		"/services/db/*":      RecipeLock,
		"/services/db/leader": RecipeElection,
		"/locks":              RecipeLock,
		"/selectors/[a-m]*":   RecipeElection,
	}
	if err := rr.Validate(); err != nil {
		t.Fatal(err)
	}
	for group, want := range map[string]Recipe{
		"/kazoo/election":      RecipeElection,
		"/services/web/leader": RecipeElection,
		"/services/db/leader":  RecipeElection, // the exact path wins
		"/services/db/backup":  RecipeLock,
		"/locks/nightly":       RecipeLock, // a root's children
		"/selectors/alpha":     RecipeElection,
		"/selectors/zeta":      "",
		"/locks/nightly/deep":  "",
	} {
		got, ok := rr.For(group)
		if got != want || ok != (want != "") {
			t.Errorf("For(%q) = %q, %v; want %q", group, got, ok, want)
		}
	}
	for _, bad := range []RecipeRules{{"/a/[": RecipeLock}, {"relative/*": RecipeLock}, {"/a": "mutex"}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("Validate(%v) accepted it", bad)
		}
	}
}
