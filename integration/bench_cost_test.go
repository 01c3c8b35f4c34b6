package integration_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/zkserver"
)

// BenchmarkServerCostPerRequest: what each kind of request a lock cycle
// makes costs the server in CPU, sent one at a time by one client, and
// sent by 10 clients at once (each waiting for its reply before the next
// request, as the lock clients do). It explains the lock figures: one at
// a time, every kind costs about the same, two to three times what it
// costs when the server is busy: most of it is the fixed cost of taking a
// request through the server's threads (selector, worker, throttler, prep
// and sync, one hand-off after another), which a busy server shares among
// the requests it finds queued, not the request's own work. So a cycle's
// cost on the server follows how its requests arrive more than how many
// there are: the handoff chain's requests find the server mostly idle, the
// others find it busy.
//
// Every read is of a node the server's response cache does not hold, as
// in a lock cycle, where the node read is new and the group's children
// change between listings: reads go round a thousand nodes, and listings
// round 450 groups of 10 children (the cache keeps 400 of each), named
// like lock nodes. A "watched" delete is of a node another session has a
// data watch on, so the server also sends that session the event, as a
// release does.
func BenchmarkServerCostPerRequest(b *testing.B) {
	zkc := benchCluster(b)
	srv := zkc.Member(0)
	const clients, serial, each = 10, 3000, 1000
	const dataNodes, groups, groupSize = 1000, 450, 10
	conns := make([]*zk.Conn, clients)
	for i := range conns {
		conns[i] = rawConn(b, zkc.Addrs(), benchSessionTimeout)
	}
	watcher := rawConn(b, zkc.Addrs(), benchSessionTimeout)
	base := groupPath(b, "cost")
	acl := zk.WorldACL(zk.PermAll)
	lockName := "_c_0123456789abcdef0123456789abcdef-lock-"
	dataPath := func(i int) string { return fmt.Sprintf("%s/d/n%04d", base, i%dataNodes) }
	listPath := func(i int) string { return fmt.Sprintf("%s/g/g%03d", base, i%groups) }
	mkdirs(b, conns[0], base+"/d")
	mkdirs(b, conns[0], base+"/g")
	mkdirs(b, conns[0], base+"/q")
	// The nodes read, created by all clients at once.
	parallel(b, conns, func(c *zk.Conn, k int) error {
		for i := k; i < dataNodes; i += clients {
			if _, err := c.Create(dataPath(i), []byte("h3"), 0, acl); err != nil {
				return err
			}
		}
		for g := k; g < groups; g += clients {
			if _, err := c.Create(listPath(g), nil, 0, acl); err != nil {
				return err
			}
			for j := range groupSize {
				if _, err := c.Create(fmt.Sprintf("%s/%s%010d", listPath(g), lockName, j), []byte("h3"), 0, acl); err != nil {
					return err
				}
			}
		}
		return nil
	})
	for range b.N {
		type kind struct {
			what, key string
			// setup runs before the measured requests, unmeasured.
			setup func(c *zk.Conn, k, n int) error
			op    func(c *zk.Conn, k, i int) error
		}
		// created[k] holds client k's nodes from the create step, which
		// the delete steps remove.
		var mu sync.Mutex
		created := make([][]string, clients)
		watched := make([][]string, clients)
		queue := base + "/q/" + lockName
		createInto := func(into [][]string) func(c *zk.Conn, k, i int) error {
			return func(c *zk.Conn, k, _ int) error {
				p, err := c.Create(queue, []byte("h3"), zk.FlagEphemeral|zk.FlagSequence, acl)
				mu.Lock()
				into[k] = append(into[k], p)
				mu.Unlock()
				return err
			}
		}
		kinds := []kind{
			{what: "create (sequential, ephemeral)", key: "create", op: createInto(created)},
			{what: "delete", key: "delete", op: func(c *zk.Conn, k, i int) error { return c.Delete(created[k][i], -1) }},
			{what: "delete, watched (fires an event)", key: "watched-delete",
				setup: func(c *zk.Conn, k, n int) error {
					for range n {
						if err := createInto(watched)(c, k, 0); err != nil {
							return err
						}
					}
					for _, p := range watched[k] {
						if _, _, _, err := watcher.GetW(p); err != nil {
							return err
						}
					}
					return nil
				},
				op: func(c *zk.Conn, k, i int) error { return c.Delete(watched[k][i], -1) }},
			{what: "getData", key: "getData", op: func(c *zk.Conn, k, i int) error {
				_, _, err := c.Get(dataPath(k*dataNodes/clients + i))
				return err
			}},
			{what: "getData, setting a watch", key: "getDataW", op: func(c *zk.Conn, k, i int) error {
				_, _, _, err := c.GetW(dataPath(k*dataNodes/clients + i))
				return err
			}},
			{what: "getData of a missing node", key: "getData-missing", op: func(c *zk.Conn, k, i int) error {
				if _, _, err := c.Get(base + "/d/missing"); err != zk.ErrNoNode {
					return fmt.Errorf("getData of a missing node: %v", err)
				}
				return nil
			}},
			{what: fmt.Sprintf("getChildren, %d children", groupSize), key: "getChildren", op: func(c *zk.Conn, k, i int) error {
				_, _, err := c.Children(listPath(k*groups/clients + i))
				return err
			}},
			{what: "exists", key: "exists", op: func(c *zk.Conn, k, i int) error {
				_, _, err := c.Exists(dataPath(k*dataNodes/clients + i))
				return err
			}},
		}
		type cost struct{ one, rtt, many time.Duration }
		costs := make(map[string]cost)
		for _, mode := range []struct {
			n, per int
		}{{1, serial}, {clients, each}} {
			for k := range created {
				created[k], watched[k] = nil, nil
			}
			for _, kd := range kinds {
				cs := conns[:mode.n]
				if kd.setup != nil {
					parallel(b, cs, func(c *zk.Conn, k int) error { return kd.setup(c, k, mode.per) })
				}
				cpu, elapsed := measureRequests(b, srv, cs, func(c *zk.Conn, k int) error {
					for i := range mode.per {
						if err := kd.op(c, k, i); err != nil {
							return err
						}
					}
					return nil
				})
				n := time.Duration(mode.n * mode.per)
				x := costs[kd.what]
				if mode.n == 1 {
					x.one, x.rtt = cpu/n, elapsed/n
				} else {
					x.many = cpu / n
				}
				costs[kd.what] = x
			}
		}
		var rows [][]string
		for _, kd := range kinds {
			x := costs[kd.what]
			rows = append(rows, []string{kd.what, micros(x.one), micros(x.rtt), micros(x.many)})
			b.ReportMetric(float64(x.many)/float64(time.Microsecond), kd.key+"-µs")
		}
		wideTable(benchOut(), fmt.Sprintf("ZooKeeper CPU per request: %d requests of each kind one at a time, then %d clients sending %d each at once", serial, clients, each),
			[]string{"request", "ZooKeeper CPU, one at a time", "round trip, one at a time", fmt.Sprintf("ZooKeeper CPU, %d clients at once", clients)}, rows)
		// A lock cycle from these costs. In BenchmarkLockHandoff the
		// handoff chain (the release that fires the waiter's watch, then
		// the waiter's proof listing) reaches an idle pipeline, one request
		// at a time; the other requests of the cycle (the create, the
		// watch, and the peers' first listing) come while it is busy.
		one := func(k string) time.Duration { return costs[k].one }
		many := func(k string) time.Duration { return costs[k].many }
		const create, watch, del = "create (sequential, ephemeral)", "getData, setting a watch", "delete, watched (fires an event)"
		list := fmt.Sprintf("getChildren, %d children", groupSize)
		cycle := func(name string, c func(string) time.Duration) row {
			h := c(create) + c(watch) + c(list) + c(del)
			p := h + c(list)
			return row{what: name, herald: micros(h), peer: micros(p), ratio: fmt.Sprintf("%.2fx", float64(h)/float64(p))}
		}
		mixed := one(del) + one(list) + many(create) + many(watch)
		table(benchOut(), "A lock cycle's ZooKeeper CPU from these costs (herald: create, watch, listing, watched delete; peer = zk.Lock and Curator: one more listing)", []row{
			cycle("every request one at a time", one),
			cycle(fmt.Sprintf("every request with %d clients at once", clients), many),
			{what: "chain (release, proof listing) one at a time, the rest at once", herald: micros(mixed), peer: micros(mixed + many(list)),
				ratio: fmt.Sprintf("%.2fx", float64(mixed)/float64(mixed+many(list)))},
		})
	}
}

// measureRequests runs f for every connection at once and returns the CPU
// time the server used meanwhile and how long it took.
func measureRequests(b *testing.B, srv *zkserver.Server, conns []*zk.Conn, f func(c *zk.Conn, k int) error) (cpu, elapsed time.Duration) {
	b.Helper()
	before := serverCPU(b, srv)
	start := time.Now()
	parallel(b, conns, f)
	elapsed = time.Since(start)
	return serverCPU(b, srv) - before, elapsed
}

// parallel runs f for every connection in a goroutine of its own and waits.
func parallel(b *testing.B, conns []*zk.Conn, f func(c *zk.Conn, k int) error) {
	b.Helper()
	errs := make(chan error, len(conns))
	var wg sync.WaitGroup
	for k, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(c, k); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
