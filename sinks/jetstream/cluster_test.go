package jetstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	hjs "github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
	"github.com/zkherald/herald/sinks/sinktest"
)

// TestClusterR3LosesNothing: on a 3-node cluster the sink with Replicas 3
// creates an R3 stream and R3 buckets. While it writes events without a
// pause, the node leading the stream is stopped and, a little later,
// started again. Every event the sink was given is in the stream exactly
// once, in order per group; every node's own copy holds them all once the
// restarted node has caught up; and two consumers that follow the stream
// with the jetstream Go API through all three URLs (an ordered consumer,
// through herald's Events, and a durable pull consumer) receive every
// event without a gap.
func TestClusterR3LosesNothing(t *testing.T) {
	c := natsserver.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()

	// AckTimeout as a bridge has it by default: the budget of one Write.
	s := connectSink(t, hjs.Config{Conn: fast(c.URL()), Replicas: 3, AckTimeout: 10 * time.Second})
	js := client(t, c.URL())
	checkReplicas(t, ctx, js, 3, hjs.DefaultStream, "KV_"+hjs.DefaultBucket)

	// More events than the test needs: the writer goes on until the test
	// has seen enough events stored after the last restart, and stops.
	const groups, step = 4, 200
	prefix := uniq(t)[1:]
	pool := sinktest.Events(prefix, groups, 5000)
	filter := "herald.*." + publish.MustTokens("/"+prefix) + ".>"

	ordered := followOrdered(t, ctx, js, "/"+prefix)
	durable := followDurable(t, ctx, js, filter)

	w := &clusterWriter{s: s}
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	done := make(chan struct{})
	go func() { defer close(done); w.run(wctx, pool, groups) }()
	progress := func(what string, n int64) {
		t.Helper()
		at := w.written.Load() + n
		waitUntil(t, ctx, fmt.Sprintf("%d more events written %s", n, what), func() bool { return w.written.Load() >= at })
	}

	// Two outages while events flow: first the node leading the stream,
	// then the node the sink is connected to (which may be the same one
	// again). Events are written before, during and after each.
	var outages []string
	for _, victim := range []func() int{
		func() int { return c.StreamLeader(hjs.DefaultStream) },
		func() int { return slices.Index(c.URLs(), s.JetStream().Conn().ConnectedUrl()) },
	} {
		progress("before an outage", step)
		var i int
		waitUntil(t, ctx, "a node to stop", func() bool { i = victim(); return i >= 0 })
		leading := c.StreamLeader(hjs.DefaultStream) == i
		c.Stop(i)
		from := w.written.Load()
		progress("with a node down", step)
		outages = append(outages, fmt.Sprintf("node %d (leading the stream: %t) down from event %d to %d, stream leader then node %d",
			i, leading, from, w.written.Load(), c.StreamLeader(hjs.DefaultStream)))
		c.Restart(t, i)
	}
	progress("after the last restart", step)
	w.stop.Store(true)
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("the writer did not stop: its last write is stuck (failed writes: %d, last error: %v)", w.failures.Load(), w.lastErr())
	}
	evs := pool[:w.written.Load()]
	t.Logf("%d events in %d groups; %s; %d writes failed and were retried (last error: %v)",
		len(evs), groups, strings.Join(outages, "; "), w.failures.Load(), w.lastErr())
	if w.failures.Load() != 0 {
		t.Errorf("%d writes failed: the sink should ride out a stream's change of leader and a reconnect within one Write (last error: %v)", w.failures.Load(), w.lastErr())
	}

	// The stream, as the cluster serves it: each event once, in order per
	// group, nothing else.
	stored := readStream(t, ctx, js, hjs.DefaultStream, "/"+prefix, len(evs))
	if n := countStored(t, js, hjs.DefaultStream, "/"+prefix); n != uint64(len(evs)) {
		t.Errorf("the stream holds %d messages for %d events", n, len(evs))
	}
	lost, dups := compareIDs(evs, stored)
	t.Logf("stream: %d stored, %d lost, %d duplicates", len(stored), lost, dups)
	if lost != 0 || dups != 0 {
		t.Errorf("stream: %d events lost, %d stored more than once", lost, dups)
	}
	inGroupOrder(t, "stream", stored)

	// Every node's own copy, the restarted node's included, holds the same
	// messages once it has caught up.
	var states []string
	waitUntil(t, ctx, "every node to hold the same copy of the stream", func() bool {
		states = states[:0]
		var first uint64
		for i := range c.Size() {
			st, ok := c.LocalStream(i, hjs.DefaultStream)
			if !ok {
				return false
			}
			states = append(states, fmt.Sprintf("node %d: %d msgs, last seq %d", i, st.Msgs, st.LastSeq))
			if i == 0 {
				first = st.LastSeq
			} else if st.LastSeq != first {
				return false
			}
		}
		return true
	})
	t.Logf("copies: %s", strings.Join(states, "; "))

	// The owners bucket ends on each group's last owner.
	kv, err := js.KeyValue(ctx, hjs.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs[len(evs)-groups:] {
		var o hjs.Owner
		entry, err := kv.Get(ctx, publish.MustTokens(e.Group))
		if err == nil {
			err = json.Unmarshal(entry.Value(), &o)
		}
		if err != nil || o.Term != e.Term {
			t.Errorf("owner of %s: term %d (%v); want term %d", e.Group, o.Term, err, e.Term)
		}
	}

	// The followers kept going through the stop and the restart.
	got := ordered.wait(t, ctx, len(evs))
	lost, dups = compareIDs(evs, got)
	t.Logf("ordered consumer: %d received, %d missing, %d duplicates", len(got), lost, dups)
	if lost != 0 || dups != 0 {
		t.Errorf("ordered consumer: %d events missing, %d received twice", lost, dups)
	}
	inGroupOrder(t, "ordered consumer", got)
	got = durable.wait(t, ctx, len(evs))
	lost, dups = compareIDs(evs, got)
	t.Logf("durable consumer: %d received, %d missing, %d redelivered", len(got), lost, dups)
	if lost != 0 {
		t.Errorf("durable consumer: %d events missing", lost)
	}
}

// checkReplicas fails t unless each stream has want replicas, all current.
func checkReplicas(t *testing.T, ctx context.Context, js jetstream.JetStream, want int, streams ...string) {
	t.Helper()
	for _, name := range streams {
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		info := st.CachedInfo()
		if info.Config.Replicas != want {
			t.Errorf("stream %s has %d replicas, want %d", name, info.Config.Replicas, want)
		}
		if info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != want-1 {
			t.Errorf("stream %s: cluster %+v, want a leader and %d other replicas", name, info.Cluster, want-1)
		}
	}
}

// clusterWriter writes events to the sink as herald's pipeline does: in
// batches, retrying a failed batch, whole, after Connect, until it is
// stored, until stop is set or the events run out.
type clusterWriter struct {
	s        *hjs.Sink
	written  atomic.Int64
	failures atomic.Int64
	stop     atomic.Bool // ends the run between two batches

	mu   sync.Mutex
	last error
}

func (w *clusterWriter) run(ctx context.Context, evs []publish.Event, batch int) {
	for i := 0; i < len(evs) && !w.stop.Load(); i += batch {
		b := evs[i:min(i+batch, len(evs))]
		for {
			err := w.s.Write(ctx, b)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			w.failures.Add(1)
			w.mu.Lock()
			w.last = err
			w.mu.Unlock()
			_ = w.s.Connect(ctx)
			time.Sleep(20 * time.Millisecond) // the pipeline's backoff, shortened
		}
		w.written.Add(int64(len(b)))
		time.Sleep(time.Millisecond) // a steady flow, not a burst
	}
}

func (w *clusterWriter) lastErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// received collects the events a follower gets.
type received struct {
	mu     sync.Mutex
	events []publish.Event
	err    error
}

func (r *received) add(e publish.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// wait waits until r holds at least n distinct events and returns all.
func (r *received) wait(t *testing.T, ctx context.Context, n int) []publish.Event {
	t.Helper()
	var got []publish.Event
	ok := func() bool {
		r.mu.Lock()
		got = append(got[:0], r.events...)
		r.mu.Unlock()
		seen := map[string]bool{}
		for _, e := range got {
			seen[e.ID] = true
		}
		return len(seen) >= n
	}
	for !ok() {
		if ctx.Err() != nil {
			r.mu.Lock()
			err := r.err
			r.mu.Unlock()
			t.Fatalf("follower received %d events, want %d (its error: %v)", len(got), n, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition
	}
	return got
}

// followOrdered follows the stream with herald's Events (an ordered
// consumer), raw: duplicates would show.
func followOrdered(t *testing.T, ctx context.Context, js jetstream.JetStream, prefix string) *received {
	t.Helper()
	es, err := hjs.Events(ctx, js, "", hjs.Raw(), hjs.RetryBackoff(20*time.Millisecond, 200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	r := &received{}
	go func() {
		for e := range es.Events() {
			if strings.HasPrefix(e.Group, prefix+"/") {
				r.add(e)
			}
		}
		r.mu.Lock()
		r.err = es.Err()
		r.mu.Unlock()
	}()
	return r
}

// followDurable follows the stream with a durable pull consumer, acking
// each message, as a consumer that must not miss an event would.
func followDurable(t *testing.T, ctx context.Context, js jetstream.JetStream, filter string) *received {
	t.Helper()
	cons, err := js.CreateOrUpdateConsumer(ctx, hjs.DefaultStream, jetstream.ConsumerConfig{
		Durable: "cluster-test", FilterSubject: filter, AckPolicy: jetstream.AckExplicitPolicy, AckWait: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &received{}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		e, err := natssink.Decode(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
		if err != nil {
			r.mu.Lock()
			r.err = err
			r.mu.Unlock()
			return
		}
		r.add(e)
		_ = m.Ack()
	}, jetstream.PullExpiry(2*time.Second), jetstream.PullHeartbeat(500*time.Millisecond),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if errors.Is(err, jetstream.ErrNoHeartbeat) || errors.Is(err, nats.ErrDisconnected) {
				return // expected while a node is down; Consume re-pulls
			}
			r.mu.Lock()
			r.err = err
			r.mu.Unlock()
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
	return r
}

// compareIDs counts the events of want missing from got, and the events
// got holds more than once.
func compareIDs(want, got []publish.Event) (missing, dups int) {
	seen := map[string]int{}
	for _, e := range got {
		seen[e.ID]++
	}
	for _, e := range want {
		if seen[e.ID] == 0 {
			missing++
		}
	}
	for _, n := range seen {
		dups += n - 1
	}
	return missing, dups
}

// inGroupOrder fails t when a group's events are out of term order.
func inGroupOrder(t *testing.T, who string, evs []publish.Event) {
	t.Helper()
	last := map[string]int64{}
	for _, e := range evs {
		if e.Term < last[e.Group] {
			t.Errorf("%s: %s term %d after term %d", who, e.Group, e.Term, last[e.Group])
			return
		}
		last[e.Group] = e.Term
	}
}

// waitUntil polls cond until it holds, failing t when ctx ends first.
func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, not ordering
	}
}

// TestReplicasNeedServers: asking for more copies than there are servers
// is refused at Connect with an error that says what to do.
func TestReplicasNeedServers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	single := natsserver.Start(t)
	cluster := natsserver.StartCluster(t, 3)
	for _, tc := range []struct {
		url      string
		replicas int
		says     string
	}{
		{single.URL(), 3, "replicas 3 needs a NATS cluster of at least 3 JetStream servers; " + single.URL() + " is not clustered: use --nats-replicas 1"},
		{cluster.URL(), 5, "replicas 5 needs 5 JetStream servers of the NATS cluster up"},
	} {
		s := newSink(t, hjs.Config{Conn: natssink.Options{URL: tc.url}, Replicas: tc.replicas})
		err := s.Connect(ctx)
		if !errors.Is(err, hjs.ErrReplicas) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("replicas %d on %s: %v; want ErrReplicas saying %q", tc.replicas, tc.url, err, tc.says)
		}
	}
	// The cluster takes what fits.
	connectSink(t, hjs.Config{Conn: natssink.Options{URL: cluster.URL()}, Replicas: 3})
}
