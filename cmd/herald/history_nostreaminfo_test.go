package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// withReaderDeniedStreamInfo admits "writer", allowed all, and "reader",
// denied the events stream's info (the key-value buckets' it may ask
// of: a reader denied those waits out a timeout per bucket), both with password
// "pw".
func withReaderDeniedStreamInfo() natsserver.Option {
	return func(o *server.Options) error {
		o.Users = []*server.User{
			{Username: "writer", Password: "pw"},
			{Username: "reader", Password: "pw", Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{"$JS.API.STREAM.INFO." + jetstream.DefaultStream}},
			}},
		}
		return nil
	}
}

// TestHistoryReaderNotAllowedStreamInfoMarksOnlyWhatItCannotKnow: a
// runner's announcements (herald run --nats, no bridge) start a group's
// events with a gain, not a bridge's first look. A reader not allowed
// stream info could not ask whether the stream dropped its oldest events
// and told the stream as one that did: every such group GAP maybe, on a
// stream that holds every event. The read itself tells: the stream's
// messages read whole, from sequence 1, none skipped.
func TestHistoryReaderNotAllowedStreamInfoMarksOnlyWhatItCannotKnow(t *testing.T) {
	url, sink := deniedInfoSink(t)
	g := uniq(t)
	mk := storyOf(g, time.Now().UTC().Add(-time.Minute))
	al, b := participant("alpha", 1), participant("bravo", 2)
	write(t, sink, mk(publish.LeaderElected, al, nil, 10, 10, false), mk(publish.LeaderLost, nil, al, 10, 15, false),
		mk(publish.LeaderElected, b, nil, 20, 20, false))
	reader := []string{"--nats", url, "--nats-user", "reader", "--nats-password", "pw"}
	if n, gaps := gapsIn(t, g, reader...); n != 2 || gaps != 0 {
		t.Errorf("history from a complete stream, by a reader not allowed stream info: %d of the group's %d tenures GAP maybe, want 0 of 2", gaps, n)
	}
	// A stream that did drop its oldest event is still told as one.
	deleteAsWriter(t, url, 30*time.Second)
	if n, gaps := gapsIn(t, g, reader...); n == 0 || gaps == 0 {
		t.Errorf("history from a stream whose first message was deleted, by a reader not allowed stream info: %d of the group's %d tenures GAP maybe, want some", gaps, n)
	}
}

// TestHistoryOfOneGroupByAReaderNotAllowedStreamInfoTellsAWholeStream:
// the history of one group, read filtered to its subject, cannot tell
// from its read whether the stream dropped or deleted messages; a reader
// not allowed stream info could not ask, and marked GAP maybe a group
// whose events begin with a change on a stream that held every event. The
// stream's count of messages and its last sequence tell, without stream
// info: whole when they are equal.
func TestHistoryOfOneGroupByAReaderNotAllowedStreamInfoTellsAWholeStream(t *testing.T) {
	url, sink := deniedInfoSink(t)
	g, other := uniq(t), uniq(t)+"-other"
	mk, mkO := storyOf(g, time.Now().UTC().Add(-time.Minute)), storyOf(other, time.Now().UTC().Add(-time.Minute))
	al, b := participant("alpha", 1), participant("bravo", 2)
	write(t, sink, mkO(publish.LeaderElected, b, nil, 5, 5, false), mk(publish.LeaderElected, al, nil, 10, 10, false),
		mk(publish.LeaderLost, nil, al, 10, 15, false), mk(publish.LeaderElected, b, nil, 20, 20, false))
	args := []string{g, "--nats", url, "--nats-user", "reader", "--nats-password", "pw"}
	if n, gaps := gapsIn(t, "", args...); n != 2 || gaps != 0 {
		t.Errorf("history of one group from a complete stream, by a reader not allowed stream info: %d of its %d tenures GAP maybe, want 0 of 2", gaps, n)
	}
	// Another group's message deleted: the reader cannot tell whose it
	// was, and marks as before.
	deleteAsWriter(t, url, 10*time.Second)
	if n, gaps := gapsIn(t, "", args...); n == 0 || gaps == 0 {
		t.Errorf("history of one group from a stream with a message deleted, by a reader not allowed stream info: %d of its %d tenures GAP maybe, want some", gaps, n)
	}
}

// deniedInfoSink starts a NATS server with withReaderDeniedStreamInfo's
// users and returns its URL and a sink writing to it as "writer".
func deniedInfoSink(t *testing.T) (string, *jetstream.Sink) {
	t.Helper()
	srv := natsserver.Start(t, withReaderDeniedStreamInfo())
	sink, err := jetstream.New(jetstream.Config{Conn: natssink.Options{URL: srv.URL(), User: "writer", Password: "pw"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sink.Close() })
	return srv.URL(), sink
}

// gapsIn runs herald history with args and counts the tenures of group
// ("" for every row) and those of them marked GAP maybe.
func gapsIn(t *testing.T, group string, args ...string) (n, gaps int) {
	t.Helper()
	for _, r := range historyJSON(t, args...) {
		if group != "" && r.Group != group {
			continue
		}
		n++
		if r.Gap {
			gaps++
		}
	}
	return n, gaps
}

// deleteAsWriter deletes the events stream's first message on the server
// at url, as "writer" (the reader may not), within timeout.
func deleteAsWriter(t *testing.T, url string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	st, err := natsserver.JetStream(t, strings.Replace(url, "nats://", "nats://writer:pw@", 1)).Stream(ctx, jetstream.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteMsg(ctx, 1); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryOfOneGroupOnALiveStreamMarksNoGap: one group's history read
// while other groups' events keep arriving (a bridge's heartbeats beside
// it). The stream's count of messages, then its last sequence, read a
// message stored in between as one the stream lacked: the group's first
// owner came GAP maybe on a stream that held every event, though the
// reader may ask stream info, which tells (a CI failure of
// TestHistoryOfRunnersBesideABridge).
func TestHistoryOfOneGroupOnALiveStreamMarksNoGap(t *testing.T) {
	url, sink := deniedInfoSink(t)
	g, other := uniq(t), uniq(t)+"-other"
	mk, mkO := storyOf(g, time.Now().UTC().Add(-time.Minute)), storyOf(other, time.Now().UTC().Add(-time.Minute))
	al := participant("alpha", 1)
	write(t, sink, mk(publish.LeaderElected, al, nil, 10, 10, false), mk(publish.LeaderLost, nil, al, 10, 15, false))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the other group's events, one every millisecond or so
		defer close(done)
		for z := int64(20); ; z++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := sink.Write(context.Background(), []publish.Event{mkO(publish.LeaderElected, al, nil, z, z, false)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for range 5 {
		if n, gaps := gapsIn(t, g, g, "--nats", url, "--nats-user", "writer", "--nats-password", "pw"); n != 1 || gaps != 0 {
			t.Fatalf("history of one group from a whole stream written to as it reads: %d of its %d tenures GAP maybe, want 0 of 1", gaps, n)
		}
	}
}
