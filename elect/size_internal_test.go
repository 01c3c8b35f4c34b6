package elect

import (
	"testing"
	"unsafe"
)

// TestPerGroupStateFitsItsSizeClass: ObserveMany keeps a member and its
// last View for every group, 100,000 of them in a bridge, and the
// allocator rounds each up to a size class: a field that tips one over
// costs every group the whole step (a View of 257 bytes takes 288). A
// field added here should be paid for by another, or kept beside the
// struct where only the groups that need it allocate it (as viewEnds).
func TestPerGroupStateFitsItsSizeClass(t *testing.T) {
	for _, c := range []struct {
		what       string
		size, most uintptr
	}{
		{"member", unsafe.Sizeof(member{}), 448},
		{"View", unsafe.Sizeof(View{}), 256},
	} {
		if c.size > c.most {
			t.Errorf("a %s takes %d bytes, over %d", c.what, c.size, c.most)
		}
	}
}
