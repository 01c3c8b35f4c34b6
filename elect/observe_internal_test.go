package elect

import "testing"

// The mark's release is the last owner's when every child change since the
// last read is explained by the two listings and the last owner is the only
// queue node gone; otherwise the reads cannot tell.
func TestOnlyRelease(t *testing.T) {
	base := releaseBase{children: []string{"a-0000000001", "b-0000000002", OfficeNode}, cversion: 3, owner: "a-0000000001"}
	cases := []struct {
		name     string
		children []string
		cversion int32
		want     string
	}{
		{"owner gone, its session queued again", []string{"b-0000000002", OfficeNode, "a-0000000003"}, 5, "a-0000000001"},
		{"owner gone alone", []string{"b-0000000002", OfficeNode}, 4, "a-0000000001"},
		{"a node came and went unseen", []string{"b-0000000002", OfficeNode}, 6, ""},
		{"a waiter went too", []string{OfficeNode}, 5, ""},
		{"the owner is still there", []string{"a-0000000001", OfficeNode}, 4, ""},
	}
	for _, c := range cases {
		if got := base.onlyRelease(View{children: c.children, Cversion: c.cversion}); got != c.want {
			t.Errorf("%s: onlyRelease = %q, want %q", c.name, got, c.want)
		}
	}
	if got := (releaseBase{}).onlyRelease(View{children: []string{"x-0000000001"}, Cversion: 1}); got != "" {
		t.Errorf("no earlier read: %q", got)
	}
}
