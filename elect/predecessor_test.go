package elect_test

import (
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// TestPredecessorDeletedBeforeTheFirstLook: the owner's node is deleted
// by hand after the next candidate's node was made but before its first
// listing, which then shows it lowest with no owner before it. Its
// command would have started at once, beside the deposed owner's, which
// its runner stops only within a sixth of the session timeout of hearing
// of the deletion: PredecessorReleased said true, as for a group with
// nobody before. It says false now, unless the change was a release.
func TestPredecessorDeletedBeforeTheFirstLook(t *testing.T) {
	addrs := sharedAddrs(t)
	for _, tc := range []struct {
		name     string
		released bool
	}{{"deleted by hand", false}, {"resigned", true}} {
		t.Run(tc.name, func(t *testing.T) {
			g := groupPath(t)
			s1, s2 := session(t, addrs), session(t, addrs)
			e1, err := elect.NewElection(s1, g, elect.CreateParents())
			if err != nil {
				t.Fatal(err)
			}
			h1, err := e1.Campaign(ctxT(t, 10*time.Second), "first")
			if err != nil {
				t.Fatal(err)
			}
			e2, err := elect.NewElection(s2, g, elect.OnQueued(func(string) {
				if tc.released {
					if err := h1.Resign(ctxT(t, 10*time.Second)); err != nil {
						t.Error(err)
					}
					return
				}
				if err := s2.Conn().Delete(h1.NodePath(), -1); err != nil {
					t.Error(err)
				}
			}))
			if err != nil {
				t.Fatal(err)
			}
			h2, err := e2.Campaign(ctxT(t, 10*time.Second), "second")
			if err != nil {
				t.Fatal(err)
			}
			got, err := h2.PredecessorReleased(ctxT(t, 10*time.Second))
			if err != nil || got != tc.released {
				t.Errorf("PredecessorReleased = %v, %v; want %v", got, err, tc.released)
			}
		})
	}
	// The first candidate of a new group had nobody before it.
	g := groupPath(t)
	e, err := elect.NewElection(session(t, addrs), g, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Campaign(ctxT(t, 10*time.Second), "alone")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := h.PredecessorReleased(ctxT(t, 10*time.Second)); err != nil || !got {
		t.Errorf("the first owner of a new group: PredecessorReleased = %v, %v; want true", got, err)
	}
}
