package main

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/natssink"
)

// herald run --nats announces the runner's own election and loss, with the
// same subjects, headers and ids a bridge would use.
func TestRunAnnouncesOnNATS(t *testing.T) {
	zk := zkFlags(t)
	g := uniq(t)
	url, announced := announcements(t, g)
	_, stderr, code := heraldRun(t, nil, append(zk, "run", "--election", g, "--id", "announcer", "--nats", url, "--", "true")...)
	if code != 0 {
		t.Fatalf("run exited %d: %s", code, stderr)
	}
	got := announced(2)
	el, lost := got[0], got[1]
	if el.Type != publish.LeaderElected || el.Owner == nil || el.Owner.ID != "announcer" || el.Term <= 0 || el.Group != g {
		t.Fatalf("first announcement %+v, want leader.elected of announcer", el)
	}
	if lost.Type != publish.LeaderLost || lost.Previous == nil || lost.Previous.Node != el.Owner.Node || lost.Term != el.Term {
		t.Fatalf("second announcement %+v, want leader.lost of %s", lost, el.Owner.Node)
	}
	if el.ID != publish.MakeID(g, el.Owner.Node, publish.LeaderElected) {
		t.Fatalf("announced id %s is not the id a bridge gives the same change", el.ID)
	}
}

// announcements starts a NATS server and subscribes to group g's subjects.
// It returns the server's URL and a function that waits for the next n
// events announced there.
func announcements(t *testing.T, g string) (string, func(n int) []publish.Event) {
	t.Helper()
	url := natsserver.Start(t).URL()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	tok, err := publish.Tokens(g)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := nc.SubscribeSync("herald.*." + tok)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return url, func(n int) []publish.Event {
		t.Helper()
		var got []publish.Event
		for len(got) < n {
			m, err := sub.NextMsg(10 * time.Second)
			if err != nil {
				t.Fatalf("after %d announced events: %v", len(got), err)
			}
			e, err := natssink.Decode(m)
			if err != nil {
				t.Fatalf("announced message does not decode: %v", err)
			}
			got = append(got, e)
		}
		return got
	}
}
