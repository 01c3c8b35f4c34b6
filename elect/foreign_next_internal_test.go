package elect

import (
	"testing"

	"github.com/go-zookeeper/zk"
)

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

// TestAClientNameGoneAtTheBlindCheckCounts: the guard's blind check reads
// a node named like a client's before the look for who owns at once
// (which comes after Guarded), and remembers one gone as inert, so that
// look passed over it. Gone, it was a client that left or one a deleteall
// took that makes its node again at once (see ownsAtOnce): it counts as
// next in line, wherever it is read first. A node there that no session
// holds does not.
func TestAClientNameGoneAtTheBlindCheckCounts(t *testing.T) {
	ctx, s, group := sharedSession(t)
	l, err := NewLock(s, group, CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctx); err != nil { // the monitor is done: its maps are ours
		t.Fatal(err)
	}
	leftover := "1b4e28ba2fa1__lock__0000000007"
	if _, err := s.Conn().Create(group+"/"+leftover, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if client, err := h.isClient(ctx, leftover); err != nil || client || h.ForeignInGroup() {
		t.Fatalf("a node no session holds: client %v (%v), ForeignInGroup %v; want neither", client, err, h.ForeignInGroup())
	}
	if client, err := h.isClient(ctx, "1b4e28ba2fa1__lock__0000000009"); err != nil || client {
		t.Fatalf("a node gone: client %v (%v); want none that may believe it owns", client, err)
	}
	if !h.ForeignInGroup() {
		t.Fatal("a node named like a client's, gone when the blind check read it, did not count as a client next in line")
	}
}
