package natssink_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	cenats "github.com/cloudevents/sdk-go/protocol/nats/v2"
	cejs "github.com/cloudevents/sdk-go/protocol/nats_jetstream/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/nats-io/nats.go"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/natssink"
	"github.com/zkherald/herald/sinks/sinktest"
)

// TestCloudEventsSDKReadsNATSMessages: every event the NATS sink publishes
// decodes with the CloudEvents Go SDK's JetStream binding (binary mode, "ce-"
// headers; it reads core NATS messages the same), passes event.Validate, and
// keeps its source exactly as herald wrote it (nothing for the SDK to
// rewrite). The SDK's plain NATS binding knows only structured mode and
// reads none of them, as the README says.
func TestCloudEventsSDKReadsNATSMessages(t *testing.T) {
	s, err := natssink.New(natssink.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sub := subscribe(t, url, "/"+t.Name())
	for i, src := range sinktest.CloudEventSources {
		g := fmt.Sprintf("/%s/s%d", t.Name(), i)
		evs := sinktest.EveryKind(g, src)
		if err := s.Write(ctx, evs); err != nil {
			t.Fatal(err)
		}
		for range evs {
			m, err := sub.NextMsgWithContext(ctx)
			if err != nil {
				t.Fatal(err)
			}
			checkSDK(t, m)
		}
	}
}

// checkSDK decodes m with the SDK and validates it against herald's own
// decoding of the same message.
func checkSDK(t *testing.T, m *nats.Msg) {
	t.Helper()
	want, err := natssink.Decode(m)
	if err != nil {
		t.Fatalf("herald decode %s: %v", m.Subject, err)
	}
	if err := publish.ValidateSource(want.Source); err != nil {
		t.Errorf("source: %v", err)
	}
	ev, err := binding.ToEvent(context.Background(), cejs.NewMessage(m))
	if err != nil {
		t.Fatalf("SDK (JetStream binding) cannot read %s (source %q): %v", m.Subject, want.Source, err)
	}
	if err := ev.Validate(); err != nil {
		t.Fatalf("SDK: event %s invalid: %v", want.ID, err)
	}
	if ev.Source() != want.Source || ev.ID() != want.ID || ev.Type() != string(want.Type) ||
		ev.Subject() != want.Group || ev.SpecVersion() != "1.0" || ev.DataContentType() != "application/json" {
		t.Errorf("SDK read source %q id %q type %q subject %q, want %q %q %q %q",
			ev.Source(), ev.ID(), ev.Type(), ev.Subject(), want.Source, want.ID, want.Type, want.Group)
	}
	if got := ev.Extensions()["term"]; fmt.Sprint(got) != fmt.Sprint(want.Term) {
		t.Errorf("SDK extension term = %v, want %d", got, want.Term)
	}
	if _, err := binding.ToEvent(context.Background(), cenats.NewMessage(m)); err == nil {
		t.Errorf("the SDK's plain NATS binding read a binary-mode message; the README says it cannot")
	}
}
