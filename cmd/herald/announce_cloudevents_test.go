package main

import (
	"context"
	"testing"
	"time"

	cejs "github.com/cloudevents/sdk-go/protocol/nats_jetstream/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/nats-io/nats.go"

	"github.com/zkherald/herald/internal/natsserver"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// A runner's announcements are valid CloudEvents whatever its --id: the id
// is percent-encoded into the source, and the message decodes with the
// CloudEvents Go SDK (JetStream binding) and passes its validation.
func TestAnnouncementIsAValidCloudEvent(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"herald-run/host with space", "herald-run/host%20with%20space"},
		{"herald-lock/job/7#a", "herald-lock/job%2F7%23a"},
		{"herald-run/host-1", "herald-run/host-1"},
		{"herald-run/", "herald-run/unknown"},
	} {
		src := runnerSource(tc.in)
		if src != tc.want {
			t.Errorf("runnerSource(%q) = %q, want %q", tc.in, src, tc.want)
		}
		p := &publish.Participant{ID: "x", Node: "n_0000000001", Session: "0x1", Sequence: 1}
		for _, e := range []publish.Event{
			{Type: publish.LeaderElected, Recipe: elect.RecipeElection, Owner: p},
			{Type: publish.LockReleased, Recipe: elect.RecipeLock, Previous: p, Reason: elect.ReasonReleased},
		} {
			e.Group, e.Term, e.Zxid, e.Time, e.Source = "/jobs/nightly", 5, 5, time.Now().UTC(), src
			e = e.WithID()
			m, err := announcement(e)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := binding.ToEvent(context.Background(), cejs.NewMessage(m))
			if err != nil {
				t.Fatalf("SDK cannot read the announcement from %q: %v", src, err)
			}
			if err := ev.Validate(); err != nil {
				t.Fatalf("SDK: announcement invalid: %v", err)
			}
			if ev.Source() != src || ev.ID() != e.ID || ev.Type() != string(e.Type) {
				t.Errorf("SDK read source %q id %q type %q, want %q %q %q", ev.Source(), ev.ID(), ev.Type(), src, e.ID, e.Type)
			}
		}
	}
}

// TestRunWithSpaceInIDAnnouncesValidCloudEvents: `herald run --id "host
// with space" --nats …` announces source herald-run/host%20with%20space,
// and the CloudEvents Go SDK reads and validates both announcements.
func TestRunWithSpaceInIDAnnouncesValidCloudEvents(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zkFlags(t)
	g := uniq(t)
	url := natsserver.Start(t).URL()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("herald.*." + publish.MustTokens(g))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	p := start(t, nil, append(zk, "run", "--election", g, "--id", "host with space", "--nats", url, "--", "sh", "-c", "sleep 0.3")...)
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("herald run exited %d:\n%s", code, p.out)
	}
	for _, want := range []publish.Type{publish.LeaderElected, publish.LeaderLost} {
		m, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("waiting for %s: %v\n%s", want, err, p.out)
		}
		ev, err := binding.ToEvent(context.Background(), cejs.NewMessage(m))
		if err != nil {
			t.Fatalf("SDK cannot read %s: %v", m.Subject, err)
		}
		if err := ev.Validate(); err != nil {
			t.Fatalf("SDK: %s invalid: %v", want, err)
		}
		if ev.Type() != string(want) || ev.Source() != "herald-run/host%20with%20space" || m.Header.Get("ce-source") != ev.Source() {
			t.Fatalf("announced type %q source %q (header %q), want %s from herald-run/host%%20with%%20space",
				ev.Type(), ev.Source(), m.Header.Get("ce-source"), want)
		}
	}
}
