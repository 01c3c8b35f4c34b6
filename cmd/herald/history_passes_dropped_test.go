package main

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// TestHistoryInPassesMarksAGroupWhoseLookWasDeletedBetweenThem: history
// of every group, more events than --events-in-memory, reads the stream
// once for each batch of groups. Whether the stream dropped its oldest
// events was asked once, at the first batch; a later batch's group whose
// first look (a bridge's snapshot) was deleted after that batch's pass
// and before the next (nats stream rmm, or a limit reached meanwhile)
// began with a change, and its first owner read as following nobody,
// GAP -, while the pass that read it skipped the deleted message. Each
// batch is told with what its own pass saw now: GAP maybe.
func TestHistoryInPassesMarksAGroupWhoseLookWasDeletedBetweenThem(t *testing.T) {
	url, sink := jetStreamSink(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	early, late := uniq(t), uniq(t)
	if late < early {
		early, late = late, early
	}
	now := time.Now().UTC().Add(-time.Minute)
	al, b := participant("alpha", 1), participant("bravo", 2)
	mkE, mkL := storyOf(early, now), storyOf(late, now)
	write(t, sink, mkE(publish.LeaderLost, nil, nil, 0, 5, true), mkE(publish.LeaderElected, al, nil, 10, 10, false),
		mkL(publish.LeaderLost, nil, nil, 0, 5, true), mkL(publish.LeaderElected, b, nil, 10, 10, false))
	st := heraldStream(ctx, t, url)
	look := lookOf(ctx, t, st, late)
	// The count, the early group's pass, then the late group's: its look
	// is deleted as that pass begins.
	ts, reads, errs := historyInBatches(ctx, t, &sourceFlags{nats: []string{url}}, nil, 2, &natsReadBegun, func(read int) {
		if read == 3 {
			if err := st.DeleteMsg(ctx, look); err != nil {
				t.Error(err)
			}
		}
	})
	if reads != 3 {
		t.Fatalf("history read the stream %d times, want 3 (a count and a pass for each group)", reads)
	}
	checkOwnerGap(t, ts, late, "bravo", true, errs)
	checkGroupUnmarked(t, ts, early, errs)
}

// lookOf is the stream sequence of group's first look (a snapshot) in st.
func lookOf(ctx context.Context, t *testing.T, st js.Stream, group string) uint64 {
	t.Helper()
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	looks := seqsOf(ctx, t, st, info.State.FirstSeq, func(e publish.Event) bool { return e.Group == group && e.Snapshot })
	if len(looks) == 0 {
		t.Fatalf("no look of %s in the stream", group)
	}
	return looks[0]
}

// heraldStream is the stream herald's NATS sink writes to on the server
// at url.
func heraldStream(ctx context.Context, t *testing.T, url string) js.Stream {
	t.Helper()
	st, err := natsserver.JetStream(t, url).Stream(ctx, jetstream.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// seqsOf lists the sequences in st, from first to its last, of the
// events that match; messages that are not events are passed over.
func seqsOf(ctx context.Context, t *testing.T, st js.Stream, first uint64, match func(publish.Event) bool) []uint64 {
	t.Helper()
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for seq := first; seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		e, err := natssink.Decode(&nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data})
		if err == nil && match(e) {
			seqs = append(seqs, seq)
		}
	}
	return seqs
}
