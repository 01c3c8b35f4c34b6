package main

import (
	"context"
	"testing"
	"time"

	"github.com/zkherald/herald/publish"
)

// TestHistoryMarksAMessageDeletedWhileItReads: charlie's election and
// release were deleted from the stream (nats stream rmm) after history's
// pass began and before its read reached them. The deleted messages were
// listed once, as the pass began, so the consumer skipped them and bravo,
// after them, read as following alpha's seen end, GAP -, charlie gone
// without a mark; one deleted before the pass was marked. Read filtered
// to the group and read whole, bravo's election now says gap.
func TestHistoryMarksAMessageDeletedWhileItReads(t *testing.T) {
	url, sink := jetStreamSink(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, _, _ := historyApp()
	sf := &sourceFlags{nats: []string{url}}
	for _, filtered := range []bool{true, false} {
		g := uniq(t)
		now := time.Now().UTC().Add(-time.Minute)
		al, c, b := participant("alpha", 1), participant("charlie", 2), participant("bravo", 3)
		mk := storyOf(g, now)
		write(t, sink, mk(publish.LeaderLost, nil, nil, 0, 5, true), mk(publish.LeaderElected, al, nil, 10, 10, false),
			mk(publish.LeaderLost, nil, al, 10, 15, false), mk(publish.LeaderElected, c, nil, 20, 20, false),
			mk(publish.LeaderLost, nil, c, 20, 25, false), mk(publish.LeaderElected, b, nil, 30, 30, false))
		st := heraldStream(ctx, t, url)
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		charlies := seqsOf(ctx, t, st, info.State.LastSeq-5, func(e publish.Event) bool {
			return e.Group == g && ((e.Owner != nil && e.Owner.ID == "charlie") || (e.Previous != nil && e.Previous.ID == "charlie"))
		})
		if len(charlies) != 2 {
			t.Fatalf("found %d of charlie's messages, want 2", len(charlies))
		}
		natsReadBegun = func() {
			natsReadBegun = nil
			for _, seq := range charlies {
				if err := st.DeleteMsg(ctx, seq); err != nil {
					t.Error(err)
				}
			}
		}
		t.Cleanup(func() { natsReadBegun = nil })
		group := ""
		if filtered {
			group = g
		}
		events, err := a.historyNATS(ctx, sf, group)
		if err != nil {
			t.Fatal(err)
		}
		if natsReadBegun != nil {
			t.Fatalf("filtered %v: the read never began", filtered)
		}
		found := false
		for _, e := range events {
			if e.Group == g && e.Owner != nil && e.Owner.ID == "bravo" {
				found = true
				if !e.Gap {
					t.Errorf("filtered %v: bravo's election, read after charlie's messages were deleted during the read, does not say gap: %+v", filtered, e)
				}
			}
		}
		if !found {
			t.Errorf("filtered %v: no bravo among %d events", filtered, len(events))
		}
	}
}
