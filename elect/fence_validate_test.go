package elect_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkherald/herald/elect"
)

// A malformed fence says what a valid one is and where it comes from,
// not only what is wrong with it.
func TestFenceValidateSaysWhatAValidOneIs(t *testing.T) {
	for _, tc := range []struct {
		f    elect.Fence
		is   error
		want string
	}{
		{elect.Fence{Group: "/g", Node: "leader", Term: 5}, nil, "such as x-0000000007, as the owner's Handle.Fence gives it"},
		{elect.Fence{Group: "/g", Node: "x-0000000007", Term: 0}, elect.ErrNotLeader, "the czxid of the owner's node, > 0, as the owner's Handle.Fence gives it"},
		{elect.Fence{Group: "g", Node: "x-0000000007", Term: 5}, elect.ErrBadPath, "the owner's group, as its Handle.Fence gives it"},
	} {
		err := tc.f.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) || tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("Validate(%+v): %v; want it to say %q", tc.f, err, tc.want)
		}
	}
}
