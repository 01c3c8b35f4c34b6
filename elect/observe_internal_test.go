package elect

import "testing"

// The mark's release is the last owner's when every child change since the
// last read is explained by the two listings, the last owner is the only
// queue node gone, and its session queued again; otherwise the reads
// cannot tell (an owner gone alone may be a session that ended after
// someone else wrote the group node).
func TestOnlyRelease(t *testing.T) {
	const owner, waiter = "candidate-0x1a2b_0000000001", "candidate-0x3c4d_0000000002"
	base := releaseBase{children: []string{owner, waiter, OfficeNode}, cversion: 3, owner: owner}
	cases := []struct {
		name     string
		children []string
		cversion int32
		want     string
	}{
		{"owner gone, its session queued again", []string{waiter, OfficeNode, "candidate-0x1a2b_0000000003"}, 5, owner},
		{"owner gone alone", []string{waiter, OfficeNode}, 4, ""},
		{"owner gone, another session queued", []string{waiter, OfficeNode, "candidate-0x5e6f_0000000003"}, 5, ""},
		{"a node came and went unseen", []string{waiter, OfficeNode, "candidate-0x1a2b_0000000003"}, 7, ""},
		{"a waiter went too", []string{OfficeNode, "candidate-0x1a2b_0000000003"}, 6, ""},
		{"the owner is still there", []string{owner, OfficeNode}, 4, ""},
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
