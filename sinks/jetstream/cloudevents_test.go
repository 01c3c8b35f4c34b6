package jetstream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	cejs "github.com/cloudevents/sdk-go/protocol/nats_jetstream/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/nats-io/nats.go"

	"github.com/zkherald/herald/publish"
	hjs "github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
	"github.com/zkherald/herald/sinks/sinktest"
)

// TestCloudEventsSDKReadsStream: every event the JetStream sink stores in
// stream HERALD, read back by a JetStream consumer, decodes with the
// CloudEvents Go SDK's JetStream binding, passes event.Validate and keeps
// its source exactly as herald wrote it, for runner-style ids with spaces
// and a bridge on an unusual hostname.
func TestCloudEventsSDKReadsStream(t *testing.T) {
	base := uniq(t)
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	var want []publish.Event
	for i, src := range sinktest.CloudEventSources {
		want = append(want, sinktest.EveryKind(fmt.Sprintf("%s/s%d", base, i), src)...)
	}
	write(t, s, want...)

	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	sub, err := js.SubscribeSync("herald.*."+publish.MustTokens(base)+".>", nats.BindStream(hjs.DefaultStream), nats.OrderedConsumer(), nats.DeliverAll())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range want {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			t.Fatalf("read stream: %v", err)
		}
		e, err := natssink.Decode(m)
		if err != nil {
			t.Fatalf("herald decode: %v", err)
		}
		if err := publish.ValidateSource(e.Source); err != nil {
			t.Errorf("source: %v", err)
		}
		ev, err := binding.ToEvent(ctx, cejs.NewMessage(m))
		if err != nil {
			t.Fatalf("SDK cannot read %s (source %q): %v", m.Subject, e.Source, err)
		}
		if err := ev.Validate(); err != nil {
			t.Fatalf("SDK: event %s invalid: %v", e.ID, err)
		}
		if ev.Source() != e.Source || ev.ID() != e.ID || ev.Type() != string(e.Type) || ev.Subject() != e.Group {
			t.Errorf("SDK read source %q id %q type %q subject %q, want %q %q %q %q",
				ev.Source(), ev.ID(), ev.Type(), ev.Subject(), e.Source, e.ID, e.Type, e.Group)
		}
	}
}
