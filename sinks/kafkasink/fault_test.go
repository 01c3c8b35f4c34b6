package kafkasink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/sinktest"
)

// pipeline writes batches as publish's pipeline does: a failed Write is
// retried whole after Connect succeeds. It reports the first write error it
// met on failed, and its end on done.
func pipeline(s *Sink, batches [][]publish.Event, written *atomic.Int64, failed chan<- error, done chan<- error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reported := false
	for _, b := range batches {
		for {
			err := s.Write(ctx, b)
			if err == nil {
				break
			}
			if !errors.Is(err, publish.ErrReconnect) {
				done <- err
				return
			}
			if !reported {
				failed <- err
				reported = true
			}
			for s.Connect(ctx) != nil {
				if ctx.Err() != nil {
					done <- fmt.Errorf("never reconnected: %w", ctx.Err())
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond): // back off between attempts
				}
			}
		}
		written.Add(1)
	}
	done <- nil
}

func TestBrokerRestartLosesNothingAndKeepsOrder(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := testConfig(t, c)
	cfg.WriteTimeout = time.Second
	s := connected(t, cfg)
	evs := sinktest.Events("restart", 4, 40)
	var batches [][]publish.Event
	for i := 0; i < len(evs); i += 8 {
		batches = append(batches, evs[i:min(i+8, len(evs))])
	}
	// A consumer that follows the stream through the outage.
	liveCtx, liveCancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer liveCancel()
	live, err := Events(liveCtx, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	liveGot := make(chan []publish.Event, 1)
	go func() { liveGot <- collect(liveCtx, live, len(evs)) }()

	var written atomic.Int64
	failed, done := make(chan error, 1), make(chan error, 1)
	go pipeline(s, batches, &written, failed, done)

	deadline := time.Now().Add(10 * time.Second)
	for written.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatal("the first batches were never written")
		}
		time.Sleep(5 * time.Millisecond) // polling a counter, not ordering events
	}
	c.Stop()
	select {
	case err := <-failed:
		if !strings.Contains(err.Error(), c.Addrs()[0]) {
			t.Errorf("write error %q does not name the broker", err)
		}
	case err := <-done:
		t.Fatalf("the pipeline finished (%v) while the broker was down", err)
	case <-time.After(15 * time.Second):
		t.Fatal("writes kept succeeding with the broker stopped")
	}
	c.Restart(t)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the pipeline did not finish after the broker came back")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	st, err := Events(ctx, cfg, "") // deduplicated by the follower
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checkOrder(t, "read after the outage", collect(ctx, st, len(evs)), evs)
	checkOrder(t, "followed through the outage", <-liveGot, evs)
}

func checkOrder(t *testing.T, what string, got, evs []publish.Event) {
	t.Helper()
	per := map[string][]string{}
	for _, e := range got {
		per[e.Group] = append(per[e.Group], e.ID)
	}
	want := map[string][]string{}
	for _, e := range evs {
		want[e.Group] = append(want[e.Group], e.ID)
	}
	for g, w := range want {
		if strings.Join(per[g], ",") != strings.Join(w, ",") {
			t.Fatalf("%s: group %s: %d events %v\nwant %d in order %v", what, g, len(per[g]), per[g], len(w), w)
		}
	}
}

func TestBridgeRestartIsSeenOnce(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := testConfig(t, c)
	evs := sinktest.Events("dedup", 2, 3)
	for i := 0; i < 2; i++ { // the same events from a bridge, then from its restarted self
		s := connected(t, cfg)
		if err := s.Write(context.Background(), evs); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	raw, err := Events(ctx, cfg, "", Unfiltered())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if n := len(collect(ctx, raw, 2*len(evs))); n != 2*len(evs) {
		t.Fatalf("topic holds %d records, want every event twice (%d)", n, 2*len(evs))
	}

	st, err := Events(ctx, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got := untilSynced(t, ctx, st)
	if strings.Join(eventIDs(byGroupOrder(got)), ",") != strings.Join(eventIDs(byGroupOrder(evs)), ",") {
		t.Fatalf("follower yielded %d events, want each of %d once", len(got), len(evs))
	}

	group := evs[0].Group
	ow, err := FollowOwners(ctx, cfg, group)
	if err != nil {
		t.Fatal(err)
	}
	defer ow.Close()
	ups := untilSynced(t, ctx, ow)
	if more := drain(ow.C()); len(more) > 0 {
		t.Fatalf("after the state at start, %d more updates: %+v", len(more), more)
	}
	if len(ups) != 1 || ups[0].Group != group || ups[0].Owner() == nil || ups[0].Event.Term != evs[len(evs)-2].Term {
		t.Fatalf("owner updates for %s: %+v, want the latest owner once", group, ups)
	}
}

// untilSynced reads a stream until it has delivered the state at start.
func untilSynced[T any](t *testing.T, ctx context.Context, st *Stream[T]) []T {
	t.Helper()
	var out []T
	for {
		select {
		case v := <-st.C():
			out = append(out, v)
		case <-st.Synced():
			return out
		case <-ctx.Done():
			t.Fatalf("stream never caught up with the records present at start (%d read)", len(out))
		}
	}
}

// drain takes what a channel holds, waiting briefly for more.
func drain[T any](c <-chan T) []T {
	var out []T
	for {
		select {
		case v := <-c:
			out = append(out, v)
		case <-time.After(200 * time.Millisecond):
			return out
		}
	}
}

func byGroupOrder(evs []publish.Event) []publish.Event {
	var groups []string
	per := map[string][]publish.Event{}
	for _, e := range evs {
		if per[e.Group] == nil {
			groups = append(groups, e.Group)
		}
		per[e.Group] = append(per[e.Group], e)
	}
	var out []publish.Event
	for _, g := range sortStrings(groups) {
		out = append(out, per[g]...)
	}
	return out
}

func sortStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
