package audit

import (
	"context"

	"github.com/zkherald/herald/publish"
)

// Pass reads a source of events (a stream, a topic) once from its start.
// It calls want with each event's group before decoding it, when the
// group can be told without decoding (else it decodes at once), and add
// with each event decoded unless want said no.
type Pass func(ctx context.Context, want func(group string) bool, add func(publish.Event)) error

// InPasses is ReadBatches for a source that pass reads: fn gets every
// event of a batch of groups at a time, in the source's order, each
// group's events in one batch and the batches in the order of their
// groups, holding about budget events (more only for a single group that
// alone has more). A source that holds no more than budget events is read
// once; a bigger one once to count each group's events and then once for
// each batch. A source that grows meanwhile gives each batch its events up
// to where that batch's read ended.
func InPasses(ctx context.Context, budget int, pass Pass, fn func(events []publish.Event) error) error {
	budget = max(budget, 1)
	counts := groupCounts{}
	var events []publish.Event
	over := false
	err := pass(ctx, func(g string) bool {
		if over && g != "" {
			count(counts, g) // counting only
			return false
		}
		return true
	}, func(e publish.Event) {
		count(counts, e.Group)
		if over {
			return
		}
		if events = append(events, e); len(events) > budget {
			over, events = true, nil
		}
	})
	switch {
	case err != nil:
		return err
	case !over:
		return fn(events)
	}
	for _, r := range batchRanges(counts, budget) {
		var batch []publish.Event
		err := pass(ctx, func(g string) bool { return g == "" || r.holds(g) }, func(e publish.Event) {
			if r.holds(e.Group) {
				batch = append(batch, e)
			}
		})
		if err == nil {
			err = fn(batch)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
