package elect

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseSequence(t *testing.T) {
	cases := []struct {
		name string
		seq  int32
		ok   bool
	}{
		{"n_0000000000", 0, true},
		{"lock-0000000042", 42, true},
		{"candidate-0x1f_2147483647", 2147483647, true},
		{"x-99-2147483647", 2147483647, true},
		{"n_-000000001", -1, true},
		{"n_-2147483648", -2147483648, true},
		{"_c_0f1e2d3c-aaaa-bbbb-cccc-0123456789ab-latch-0000000007", 7, true},
		{"herald-office", 0, false},
		{"n_12345", 0, false},
		{"n_2147483648", 0, false}, // beyond int32: not something ZooKeeper writes
		{"n_00000-0001", 0, false},
		{"", 0, false},
	}
	for _, c := range cases {
		seq, ok := ParseSequence(c.name)
		if ok != c.ok || seq != c.seq {
			t.Errorf("ParseSequence(%q) = %d, %v; want %d, %v", c.name, seq, ok, c.seq, c.ok)
		}
	}
}

func TestOrderAcrossWrap(t *testing.T) {
	names := []string{"n_-2147483647", "n_2147483646", "n_-2147483648", "n_2147483647", "junk", "n_-000000002"}
	es := parseChildren(names, reported(-2147483646, len(names))) // n_-000000002: past the counter, last
	var got []string
	for _, e := range es {
		got = append(got, e.name)
	}
	want := []string{"n_2147483646", "n_2147483647", "n_-2147483648", "n_-2147483647", "n_-000000002"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order across the wrap:\n got %v\nwant %v", got, want)
	}
}

// reported is the child version a stat reports for a group whose counter
// (the next sequence) is counter, with children children: ZooKeeper
// reports twice the creates less the children there are.
func reported(counter int32, children int) int32 {
	return int32(2*uint32(counter) - uint32(children))
}

// TestOrderAfterManyDeletes: a lock's group two thousand million cycles
// old, its owner and one waiter queued. The child version counts deletes
// too: measured from it, the waiter's distance had wrapped and the owner's
// not, so the waiter came first and owned beside the owner. Measured
// from the counter the owner comes first, whatever the order of the
// listing, across the counter's own wrap too.
func TestOrderAfterManyDeletes(t *testing.T) {
	for _, c := range []struct {
		counter       int32
		owner, waiter int32
	}{
		{1<<31 - 1, 1<<31 - 6, 1<<31 - 2},
		{1<<31 - 1, 1<<31 - 40, 1<<31 - 2},
		{-1 << 31, 1<<31 - 3, 1<<31 - 1},
		{-1<<31 + 2, 1<<31 - 3, -1 << 31},
		{1_500_000_000, 1_499_999_990, 1_499_999_999},
	} {
		owner, waiter := "lock-"+FormatSequence(c.owner), "lock-"+FormatSequence(c.waiter)
		for _, names := range [][]string{{owner, waiter}, {waiter, owner}, {waiter, "herald-office", owner}} {
			es := parseChildren(names, reported(c.counter, len(names)))
			if len(es) != 2 || es[0].name != owner {
				t.Errorf("counter %d, listed as %v: the queue is %v, want %s first", c.counter, names, es, owner)
			}
		}
	}
}

// TestOrderWithAFarSequenceIsTotal: a name made by hand whose sequence is
// 2^31 or more from the queue's made the pairwise order circular (A < B <
// X < A), and which node came first depended on the order ZooKeeper
// listed them in: two waiters could each find themselves lowest. Measured
// from the group's counter, every order of the same listing gives one
// queue: a sequence behind the counter by more than the queue's sorts
// first, one the counter has not reached last.
func TestOrderWithAFarSequenceIsTotal(t *testing.T) {
	a, b := "n_0000000000", "n_0000000003"
	far := int32(3)
	far += 1<<31 - 1 // 2^31-1 after b: the walk's A < B < X < A
	for _, c := range []struct {
		x     int32
		first bool
	}{{far, false}, {1 << 30, false}, {4, false}, {-5, true}, {far + 10, true}} {
		x := "x_" + FormatSequence(c.x)
		names := []string{a, b, x}
		want := fmt.Sprint([]string{a, b, x})
		if c.first {
			want = fmt.Sprint([]string{x, a, b})
		}
		for _, perm := range [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
			var got []string
			for _, e := range parseChildren([]string{names[perm[0]], names[perm[1]], names[perm[2]]}, reported(4, 3)) {
				got = append(got, e.name)
			}
			if fmt.Sprint(got) != want {
				t.Errorf("%s (the counter at 4), listed as %v: the queue is %v, want %s", x, perm, got, want)
			}
		}
	}
}

func TestParseNameConventions(t *testing.T) {
	cases := []struct {
		name, conv, id string
		session        int64
	}{
		{"candidate-0000000001000abc-0badf00d_0000000003", "herald", "candidate-0000000001000abc-0badf00d", 0x1000abc}, // before dialects
		{"_c_00000000-0100-0abc-0bad-f00d68726c65-latch-0000000003", "herald", "0000000001000abc-0badf00d", 0x1000abc},
		{"0000000001000abc0badf00d68726c6c__lock__0000000003", "herald", "0000000001000abc-0badf00d", 0x1000abc},
		{"_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-latch-0000000001", "curator", "latch", 0},
		{"_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-lock-0000000009", "curator", "lock", 0},
		{"_c_0123456789abcdef0123456789abcdef-lock-0000000002", "go-zookeeper", "lock", 0},
		{"4b3c2d1e0f4b3c2d1e0f4b3c2d1e0f11__lock__0000000005", "kazoo", "4b3c2d1e0f4b3c2d1e0f4b3c2d1e0f11__lock", 0},
		{"candidate-72057738101588070_0000000004", "seed", "candidate-72057738101588070", 72057738101588070},
		{"lock-0000000011", "seed", "lock", 0},
		{"n_0000000012", "seed", "n", 0},
		{"x-72057738101588070-0000000013", "zookeeper-recipes", "x-72057738101588070", 72057738101588070},
		{"72057738101588070-core_node3-n_0000000014", "solr", "core_node3", 72057738101588070},
		{"-72057738101588070-10.0.0.1:8983_solr-n_0000000015", "solr", "10.0.0.1:8983_solr", -72057738101588070},
	}
	for _, c := range cases {
		info, ok := ParseName(c.name)
		if !ok || info.Convention != c.conv || info.ID != c.id || info.Session != c.session {
			t.Errorf("ParseName(%q) = %+v, %v; want convention %s id %q session %d", c.name, info, ok, c.conv, c.id, c.session)
		}
	}
}

func FuzzParseName(f *testing.F) {
	for _, s := range []string{"n_0000000001", "n_-2147483648", "_c_x-lock-0000000001", "a__lock__0000000001", "herald-office", "-", "0000000000", "_c_5b3e1f4a-1c2d-4e5f-8a9b-0c1d2e3f4a5b-0000000001", "_c_5b3e1f4a-1c2d-4e5f-8a9b-0c1d2e3f4a5b--__0000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		// Reading the name as every foreign client would, beside others,
		// never fails; a name beside itself is never a hazard.
		_ = hazard(parseChildren([]string{"_c_5b3e1f4a-1c2d-4e5f-8a9b-0c1d2e3f4a5b-lock-0000000001", name, "9f8e__lock__0000000002"}, 3))
		_, _, _ = blindTo([]string{name, "_c_5b3e1f4a-1c2d-4e5f-8a9b-0c1d2e3f4a5b-__READ__0000000003"}, "_c_0100000a-20d7-0001-0000-000168726c6c-lock-0000000000", nil)
		if h := hazard(parseChildren([]string{name}, 0)); h != "" {
			t.Fatalf("%q alone is a hazard: %s", name, h)
		}
		seq, ok := ParseSequence(name)
		info, ok2 := ParseName(name)
		if ok != ok2 {
			t.Fatalf("ParseSequence and ParseName disagree on %q", name)
		}
		if !ok {
			return
		}
		if info.Sequence != seq || info.ID == "" {
			t.Fatalf("ParseName(%q) = %+v, sequence %d", name, info, seq)
		}
		// What ZooKeeper would write for this sequence must parse back.
		back, ok := ParseSequence("p_" + FormatSequence(seq))
		if !ok || back != seq {
			t.Fatalf("sequence %d does not round-trip: %d %v", seq, back, ok)
		}
		if SeqLess(seq, seq) || !SeqLess(seq, seq+1) {
			t.Fatalf("SeqLess is not a strict order at %d", seq)
		}
	})
}

func TestValidatePath(t *testing.T) {
	for _, p := range []string{"", "jobs", "/", "/jobs/", "/a//b", "/a/./b", "/zookeeper/x", "/a\x00b"} {
		if err := ValidatePath(p); err == nil {
			t.Errorf("ValidatePath(%q) accepted a bad path", p)
		}
	}
	for _, p := range []string{"/jobs", "/jobs/nightly", "/a-b/c_d/e.f", "/caf\u00e9/\u65e5\u672c"} {
		if err := ValidatePath(p); err != nil {
			t.Errorf("ValidatePath(%q): %v", p, err)
		}
	}
	// The server checks UTF-16 chars, where a character above U+FFFF is a
	// surrogate pair, which it refuses: herald says so before it asks.
	for p, r := range map[string]string{"/locks/\U0001f512": "U+1F512", "/a/b\U00010000c": "U+10000", "/\U0010ffff": "U+10FFFF"} {
		if err := ValidatePath(p); err == nil || !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), "holds character "+r+", which ZooKeeper does not allow") {
			t.Errorf("ValidatePath(%q) = %v, want the character %s named", p, err, r)
		}
	}
}

// The hand-written formatters write what ZooKeeper's "%010d" and the
// documented herald id say, for any value, and every dialect's name reads
// back as herald's with the same session, counter and recipe.
func FuzzFormatNames(f *testing.F) {
	f.Add(int32(0), int64(0), uint32(0), false)
	f.Add(int32(-1), int64(-1), uint32(0xffffffff), true)
	f.Add(int32(2147483647), int64(0x0100016aab610005), uint32(7), false)
	f.Add(int32(-2147483648), int64(1), uint32(1), true)
	f.Fuzz(func(t *testing.T, seq int32, session int64, nonce uint32, lock bool) {
		if got, want := FormatSequence(seq), fmt.Sprintf("%010d", seq); got != want {
			t.Fatalf("FormatSequence(%d) = %q, want %q", seq, got, want)
		}
		id := heraldID{session: session, nonce: nonce, recipe: RecipeElection}
		tag := "68726c65"
		if lock {
			id.recipe, tag = RecipeLock, "68726c6c"
		}
		if want := fmt.Sprintf("%016x%08x%s", uint64(session), nonce, tag); id.hex() != want {
			t.Fatalf("herald id %+v = %q, want %q", id, id.hex(), want)
		}
		for _, d := range []Dialect{DialectCuratorLock, DialectCuratorLatch, DialectKazoo, DialectClassic} {
			name := nodeBase(d, id, "job-") + FormatSequence(seq)
			got, gd, ok := heraldNode(name)
			if !ok || got != id || gd != d {
				t.Fatalf("heraldNode(%q) = %+v, %s, %v; want %+v, %s", name, got, gd, ok, id, d)
			}
			info, ok := ParseName(name)
			if !ok || info.Convention != "herald" || info.Session != session || info.Recipe != id.recipe || info.Sequence != seq {
				t.Fatalf("ParseName(%q) = %+v", name, info)
			}
			if !strings.Contains(name, marker(d, id)) {
				t.Fatalf("%q does not hold its marker %q", name, marker(d, id))
			}
		}
	})
}
