package bridge_test

import (
	"errors"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// TestRestartAfterOneKafkaElection: a bridge observing Kafka's controller
// (with /controller_epoch) is stopped, one controller election happens, and
// the bridge starts again on the same sink: its first snapshot names the
// new controller without a gap, whichever sink it resumes from (the audit
// log, the owners bucket, the owners topic), since the report's epoch
// counts that one election. Before, the report had no epoch, and any other
// owner since its zxid was a gap. Two elections while it was down are one.
func TestRestartAfterOneKafkaElection(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	for _, kind := range []string{"audit", "jetstream", "kafka"} {
		t.Run(kind, func(t *testing.T) {
			chroot := groupPath(t)
			admin := session(t, addrs)
			for _, p := range []string{path.Dir(chroot), chroot} {
				if _, err := admin.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
					t.Fatal(err)
				}
			}
			ctrl := chroot + "/controller"
			sinks := restartSinks(t, kind, url)
			events := collect(t, url, "herald.*."+publish.MustTokens(ctrl))
			// run starts a bridge, waits for its snapshot of the controller
			// and for its sinks to have stored it, and stops it.
			run := func(src string) publish.Event {
				t.Helper()
				r := start(t, bridge.Config{Servers: addrs, Leaders: map[string]elect.SingleNode{ctrl: elect.SingleNodeFor(ctrl)},
					Source: src, Sinks: sinks(), Lossless: []string{kind}})
				var snap publish.Event
				waitFor(t, 20*time.Second, src+"'s snapshot of the controller", func() bool {
					for _, e := range events.all() {
						if e.Source == src && e.Snapshot && e.Owner != nil {
							snap = e
							return true
						}
					}
					return false
				})
				waitFor(t, 20*time.Second, "the sinks caught up", func() bool {
					st := r.Pipeline().Stats()
					return st.Sinks[kind].Delivered == st.Published
				})
				if err := r.stop(t); err != nil {
					t.Fatal(err)
				}
				return snap
			}
			check := func(e publish.Event, broker string, epoch int64, gap bool) {
				t.Helper()
				if e.Owner.ID != broker || e.Epoch != epoch || e.Gap != gap {
					t.Fatalf("%s's snapshot: controller %s, epoch %d, gap %v; want %s, %d, %v", e.Source, e.Owner.ID, e.Epoch, e.Gap, broker, epoch, gap)
				}
			}

			b1 := electController(t, addrs, chroot, 1)
			check(run("first"), "1", 1, false)
			// One election while the bridge was down.
			_ = b1.Close()
			b2 := electController(t, addrs, chroot, 2)
			check(run("second"), "2", 2, false)
			// Two: broker 3's tenure passed unseen.
			_ = b2.Close()
			_ = electController(t, addrs, chroot, 3).Close()
			electController(t, addrs, chroot, 4)
			check(run("third"), "4", 4, true)
		})
	}
}

// restartSinks makes, for each start of a bridge, a sink of the kind
// given on a store that outlives it: an audit log, the owners bucket or the
// owners topic. Beside an audit log or Kafka, a core NATS sink lets the
// test's subscriber see the events.
func restartSinks(t *testing.T, kind, url string) func() []publish.Sink {
	t.Helper()
	switch kind {
	case "audit":
		log := filepath.Join(t.TempDir(), "audit.log")
		return func() []publish.Sink {
			as, err := audit.New(log)
			if err != nil {
				t.Fatal(err)
			}
			return []publish.Sink{as, coreSink(t, url)}
		}
	case "jetstream":
		return func() []publish.Sink { return []publish.Sink{jsSink(t, url)} }
	}
	kc := kafkatest.Start(t)
	topic := strings.ReplaceAll(strings.Trim(groupPath(t), "/"), "/", ".")
	cfg := kafkasink.Config{
		Brokers: kc.Addrs(), EventsTopic: topic + ".events", OwnersTopic: topic + ".owners", BridgesTopic: topic + ".bridges",
		Partitions: 1, ReplicationFactor: 1, WriteTimeout: 3 * time.Second,
	}
	return func() []publish.Sink {
		ks, err := kafkasink.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return []publish.Sink{ks, coreSink(t, url)}
	}
}

// electController does what Kafka's
// KafkaZkClient.registerControllerAndIncrementControllerEpoch does, on a
// session of the broker's own: read /controller_epoch (made with 0 the
// first time), then in one multi create the EPHEMERAL /controller with the
// broker's JSON and set the epoch one higher at the version read. It tries
// again while the last controller's node is still there (its session's
// end not yet applied). Closing the session ends the broker's tenure.
func electController(t *testing.T, addrs []string, chroot string, broker int) *elect.Session {
	t.Helper()
	s := session(t, addrs)
	c := s.Conn()
	epochPath := chroot + "/controller_epoch"
	if _, err := c.Create(epochPath, []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	ctrl := []byte(`{"version":2,"brokerid":` + strconv.Itoa(broker) + `,"timestamp":"` + strconv.FormatInt(time.Now().UnixMilli(), 10) + `","kraftControllerEpoch":-1}`)
	waitFor(t, 10*time.Second, "broker "+strconv.Itoa(broker)+" elected", func() bool {
		data, st, err := c.Get(epochPath)
		if err != nil {
			t.Fatal(err)
		}
		epoch, err := strconv.ParseInt(string(data), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Multi(
			&zk.CreateRequest{Path: chroot + "/controller", Data: ctrl, Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral},
			&zk.SetDataRequest{Path: epochPath, Data: []byte(strconv.FormatInt(epoch+1, 10)), Version: st.Version},
		)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("broker %d: elect: %v", broker, err)
		}
		return err == nil
	})
	return s
}
