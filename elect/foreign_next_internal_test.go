package elect

import "testing"

// TestForeignIn: herald's own names in every dialect, and nodes without a
// sequence (the office, a checkpoint), are no foreign client; Curator's,
// Kazoo's and go-zookeeper's names are, unless the guard found them inert.
func TestForeignIn(t *testing.T) {
	id := heraldID{session: 0x10002e043040002, nonce: 7, recipe: RecipeLock}
	var ours []string
	for _, d := range []Dialect{DialectCuratorLock, DialectCuratorLatch, DialectKazoo, DialectClassic} {
		ours = append(ours, nodeBase(d, id, "x-")+"0000000003")
	}
	ours = append(ours, "herald-office", "herald-checkpoint")
	if foreignIn(ours, nil) {
		t.Fatalf("herald's own nodes %v read as a foreign client's", ours)
	}
	for _, c := range []string{
		"_c_c3c5a32a-62c3-4221-8747-eb4945bd8ae0-lock-0000000004", // Curator
		"1b4e28ba2fa1__lock__0000000004",                          // Kazoo
		"_c_a1b2-lock-0000000004",                                 // go-zookeeper
		"lock-0000000004",                                         // the classic recipe
	} {
		if !foreignIn(append(ours, c), nil) {
			t.Errorf("%s beside herald's nodes not read as a foreign client's", c)
		}
		if foreignIn(append(ours, c), map[string]bool{c: true}) {
			t.Errorf("%s, found inert, still read as a foreign client's", c)
		}
	}
}
