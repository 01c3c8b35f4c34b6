package audit

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/zkherald/herald/publish"
)

// InPasses, whatever the budget, tells the history the whole source
// tells, reads a source within the budget once, and asks for a group
// before decoding only what a batch needs.
func TestInPassesTellsTheHistoryOfTheWholeSource(t *testing.T) {
	ctx := context.Background()
	p1, p2 := twoBridgeLogs(t)
	all1, _ := ReadAll(ctx, p1, nil)
	all2, _ := ReadAll(ctx, p2, nil)
	source := append(append([]publish.Event(nil), all1...), all2...)
	want := History(Merge(source))
	for _, skims := range []bool{true, false} {
		for _, budget := range []int{0, 1, 5, 17, len(source)} {
			passes, decoded := 0, 0
			pass := func(_ context.Context, want func(string) bool, add func(publish.Event)) error {
				passes++
				for _, e := range source {
					g := ""
					if skims {
						g = e.Group
					}
					if want(g) {
						decoded++
						add(e)
					}
				}
				return nil
			}
			var got []Tenure
			last := ""
			err := InPasses(ctx, budget, pass, func(events []publish.Event) error {
				groups := map[string]bool{}
				for _, e := range events {
					groups[e.Group] = true
				}
				if len(events) > max(budget, 1) && len(groups) > 1 {
					t.Errorf("budget %d: a batch of %d events over %d groups", budget, len(events), len(groups))
				}
				for g := range groups {
					if g <= last {
						t.Errorf("budget %d: group %s in a batch after %s's", budget, g, last)
					}
				}
				for g := range groups {
					last = max(last, g)
				}
				got = append(got, History(Merge(events))...)
				return nil
			})
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("skims %v, budget %d: %v; the batches tell\n%+v\nwant\n%+v", skims, budget, err, got, want)
			}
			switch {
			case budget >= len(source) && passes != 1:
				t.Errorf("budget %d: %d passes over a source of %d events, want 1", budget, passes, len(source))
			case budget < len(source) && skims && decoded > max(budget, 1)+1+len(source):
				t.Errorf("budget %d: %d events decoded over %d passes, want each once after the first pass's %d", budget, decoded, passes, max(budget, 1)+1)
			}
		}
	}
	stop := errors.New("enough")
	if err := InPasses(ctx, 1, func(context.Context, func(string) bool, func(publish.Event)) error { return stop }, func([]publish.Event) error { return nil }); !errors.Is(err, stop) {
		t.Errorf("a pass failing: %v, want its error", err)
	}
}
