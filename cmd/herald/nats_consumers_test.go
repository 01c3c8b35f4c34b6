package main

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
	"github.com/zkherald/herald/sinks/jetstream"
)

// TestReadersLeaveNoConsumerBehind: who --nats and history --nats read
// the events stream through a consumer of their own. They left it to the
// server, which kept it five idle minutes, and at most 1,000 of them a
// stream: who --nats polled by a script filled the stream's limit within
// a minute, and from then on every reader of the stream was refused
// ("maximum consumers limit reached"; found when a test polled who for
// 45 s). Each reader now deletes its consumer when it is done.
func TestReadersLeaveNoConsumerBehind(t *testing.T) {
	g, url := uniq(t), natsserver.Start(t).URL()
	zkc := zktest.Shared(t)
	br := start(t, nil, "bridge", "--zk", zkc.ConnectString(), "--watch", g, "--nats", url, "--source", "br")
	start(t, nil, "--zk", zkc.ConnectString(), "lock", "--lock", g, "--id", "owner-A", "--", "sleep", "60")
	waitWhoNATS(t, g, url, "owner-A", br)
	before := streamConsumers(t, url)
	for _, args := range [][]string{{"who", g, "--nats", url}, {"who", g, "--json", "--nats", url}, {"history", g, "--nats", url}, {"history", "--nats", url}} {
		if out, stderr, code := heraldRun(t, nil, args...); code != 0 {
			t.Fatalf("herald %v: exit %d\n%s%s", args, code, out, stderr)
		}
	}
	if after := streamConsumers(t, url); after > before {
		t.Errorf("the events stream has %d consumers after four reads, %d before: the readers left theirs behind", after, before)
	}
}

// streamConsumers counts the consumers of the events stream at url.
func streamConsumers(t *testing.T, url string) int {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, jetstream.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Consumers
}
