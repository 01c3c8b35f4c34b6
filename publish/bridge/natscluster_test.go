package bridge_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// TestNATSClusterNodeLost: a bridge publishes real leader changes to an R3
// stream on a 3-node NATS cluster while the node leading the stream goes
// down and comes back: stopped cleanly (it hands its leaderships over
// first), and, on a cluster of nats-server processes, killed with SIGKILL
// (nothing handed over) and restarted on its store. Every event the bridge
// published is in the stream exactly once, and the JetStream sink never
// fell behind for good: its backlog empties and nothing was collapsed. The
// stream and the buckets herald creates keep three copies.
func TestNATSClusterNodeLost(t *testing.T) {
	t.Run("stopped", func(t *testing.T) {
		c := natsserver.StartCluster(t, 3)
		nodeLost(t, c.URL(), func() int { return c.StreamLeader(jetstream.DefaultStream) }, c.Stop, func(i int) { c.Restart(t, i) })
	})
	t.Run("killed", func(t *testing.T) {
		c := natsserver.StartProcessCluster(t, 3)
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		nodeLost(t, c.URL(), func() int { return processStreamLeader(t, c) },
			func(i int) { must(c.Kill(i)) }, func(i int) { must(c.Restart(i)) })
	})
}

// nodeLost runs TestNATSClusterNodeLost on the cluster at url: leaderOf
// names the node leading the stream (-1 while none does), down and up
// take it down and bring it back.
func nodeLost(t *testing.T, url string, leaderOf func() int, down, up func(node int)) {
	addrs := zkAddrs(t)
	root := groupPath(t)
	groups := []string{root + "/a", root + "/b", root + "/c"}

	sink, err := jetstream.New(jetstream.Config{Replicas: 3, Conn: natssink.Options{
		URL: url, Name: t.Name(), ReconnectWait: 20 * time.Millisecond, MaxReconnectWait: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordSink{}
	r := start(t, bridge.Config{Servers: addrs, Watch: groups, Sinks: []publish.Sink{sink, rec}, Source: "cluster-bridge",
		PipelineOptions: []publish.Option{publish.WithBackoff(20*time.Millisecond, 200*time.Millisecond)}})
	waitStatus(t, r.Bridge, 20*time.Second, "the bridge ready", func(st bridge.Status) bool { return len(st.NotReady()) == 0 })

	// Leaders come and go in every group until told to stop.
	s := session(t, addrs)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var terms atomic.Int64
	for _, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			churn(t, s, g, &stop, &terms)
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()

	progress := func(what string, n int) {
		t.Helper()
		at := rec.count() + n
		waitFor(t, 20*time.Second, fmt.Sprintf("%d more events %s", n, what), func() bool { return rec.count() >= at })
	}
	progress("before the outage", 30)
	js := natsserver.JetStream(t, url)
	var leader int
	waitFor(t, 10*time.Second, "a leader of the stream", func() bool { leader = leaderOf(); return leader >= 0 })
	down(leader)
	from := rec.count()
	progress("with the stream's leader down", 30)
	whileDown := rec.count() - from
	up(leader)
	progress("after the restart", 30)
	stop.Store(true)
	wg.Wait()

	// Once the last changes are published (nothing new for a while), the
	// JetStream sink has every event and collapsed none.
	var st publish.Stats
	last, quietSince := int64(-1), time.Now()
	waitFor(t, 20*time.Second, "every event published and delivered", func() bool {
		st = r.Pipeline().Stats()
		if st.Published != last {
			last, quietSince = st.Published, time.Now()
		}
		j := st.Sinks["jetstream"]
		return time.Since(quietSince) > 300*time.Millisecond && j.Backlog == 0 && j.Delivered == st.Published && rec.count() == int(st.Published)
	})
	js0 := st.Sinks["jetstream"]
	if js0.Collapsed != 0 {
		t.Errorf("the JetStream sink collapsed %d events", js0.Collapsed)
	}
	want := rec.count()

	stored := storedEvents(t, js, root, want)
	published := rec.ids()
	var missing, dups int
	seen := map[string]int{}
	for _, e := range stored {
		seen[e.ID]++
		if seen[e.ID] == 2 {
			dups++
		}
	}
	for id := range published {
		if seen[id] == 0 {
			missing++
		}
	}
	t.Logf("%d leader terms; the bridge published %d events (%d distinct); node %d (the stream's leader) was down for %d of them; stream: %d stored, %d missing, %d duplicated; sink errors retried: %d",
		terms.Load(), want, len(published), leader, whileDown, len(stored), missing, dups, js0.Errors)
	if missing != 0 || dups != 0 || len(seen) != len(published) {
		t.Errorf("stream holds %d distinct events for %d published: %d missing, %d duplicated", len(seen), len(published), missing, dups)
	}

	// The stream and both buckets (owners, bridges' heartbeats) keep three
	// copies. A cluster that lost a node may take a while to answer its
	// API again: ask until it does.
	for _, name := range []string{jetstream.DefaultStream, "KV_" + jetstream.DefaultBucket, "KV_" + jetstream.DefaultBridgesBucket} {
		var str njs.Stream
		var err error
		waitFor(t, 30*time.Second, "the info of stream "+name, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			str, err = js.Stream(ctx, name)
			return err == nil
		})
		if n := str.CachedInfo().Config.Replicas; n != 3 {
			t.Errorf("stream %s has %d replicas, want 3", name, n)
		}
	}
}

// processStreamLeader is the node of c leading herald's stream, -1 while
// none does.
func processStreamLeader(t *testing.T, c *natsserver.ProcessCluster) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	str, err := natsserver.JetStream(t, c.URL()).Stream(ctx, jetstream.DefaultStream)
	if err != nil || str.CachedInfo().Cluster == nil {
		return -1
	}
	return c.Index(str.CachedInfo().Cluster.Leader)
}

// churn makes leaders in group one after another: each campaigns, leads
// briefly and resigns.
func churn(t *testing.T, s *elect.Session, group string, stop *atomic.Bool, terms *atomic.Int64) {
	el, err := elect.NewElection(s, group, elect.CreateParents())
	if err != nil {
		t.Errorf("election %s: %v", group, err)
		return
	}
	for i := 0; !stop.Load(); i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		h, err := el.Campaign(ctx, fmt.Sprintf("leader-%d", i))
		if err == nil {
			terms.Add(1)
			time.Sleep(10 * time.Millisecond) // hold office for a moment
			err = h.Resign(ctx)
		}
		cancel()
		if err != nil {
			t.Errorf("term %d of %s: %v", i, group, err)
			return
		}
	}
}

// storedEvents reads the events the HERALD stream holds for groups under
// root, at least min of them.
func storedEvents(t *testing.T, js njs.JetStream, root string, min int) []publish.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, jetstream.DefaultStream, njs.OrderedConsumerConfig{
		FilterSubjects: []string{"herald.*." + publish.MustTokens(root) + ".>"}})
	if err != nil {
		t.Fatal(err)
	}
	var out []publish.Event
	for {
		b, err := cons.Fetch(500, njs.FetchMaxWait(300*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range b.Messages() {
			n++
			e, err := natssink.Decode(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
			if err != nil {
				t.Fatalf("undecodable message on %s: %v", m.Subject(), err)
			}
			out = append(out, e)
		}
		if n == 0 && len(out) >= min || ctx.Err() != nil {
			return out
		}
	}
}

// recordSink keeps every event the bridge hands it: what was published.
type recordSink struct {
	mu     sync.Mutex
	events []publish.Event
}

func (r *recordSink) Name() string                  { return "record" }
func (r *recordSink) Connect(context.Context) error { return nil }
func (r *recordSink) Close() error                  { return nil }

func (r *recordSink) Write(_ context.Context, batch []publish.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, batch...)
	return nil
}

func (r *recordSink) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// ids is the set of distinct event ids published (a snapshot may repeat
// an id; the stream stores it once).
func (r *recordSink) ids() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]bool{}
	for _, e := range r.events {
		out[e.ID] = true
	}
	return out
}
