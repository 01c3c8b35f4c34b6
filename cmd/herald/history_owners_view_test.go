package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	js "github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/jetstream"
)

// dropEvents removes every stored event of g from the stream, as its
// retention would, and leaves the owners bucket as it is.
func dropEvents(t *testing.T, s *jetstream.Sink, g string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := s.JetStream().Stream(ctx, jetstream.DefaultStream)
	if err == nil {
		err = st.Purge(ctx, js.WithPurgeSubject("herald.*."+publish.MustTokens(g)))
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestHistoryOfAllGroupsPlacesOwnersViewRowsInOrder: in the history of
// every group, the row of an owner whose events were all dropped, told
// from the owners view, came after every other row, not in group order
// with them (found by a review). It must stand between the groups it
// sorts between, whole or read in batches, and still say GAP maybe.
func TestHistoryOfAllGroupsPlacesOwnersViewRowsInOrder(t *testing.T) {
	t.Parallel() // waits on processes, not the CPU
	url, s := jetStreamSink(t)
	g := uniq(t)
	for _, x := range []string{"-a", "-b", "-c"} {
		write(t, s, story(g+x)...)
	}
	dropEvents(t, s, g+"-b")
	for _, held := range []string{"200000", "1"} {
		ts := historyJSON(t, "--nats", url, "--events-in-memory", held)
		var groups []string
		for _, r := range ts {
			groups = append(groups, r.Group)
			if r.Group == g+"-b" && !r.Gap {
				t.Errorf("--events-in-memory %s: %s's row told from the owners view says no gap: %+v", held, r.Group, r)
			}
		}
		want := []string{g + "-a", g + "-a", g + "-b", g + "-c", g + "-c"}
		if strings.Join(groups, " ") != strings.Join(want, " ") {
			t.Errorf("--events-in-memory %s: rows of groups\n%v\nwant\n%v", held, groups, want)
		}
	}
}

// historyApp is an app that writes to the buffers it returns.
func historyApp() (*app, *bytes.Buffer, *bytes.Buffer) {
	var out, errs bytes.Buffer
	return &app{stdout: &out, stderr: &errs, log: slog.New(slog.NewTextHandler(&errs, nil))}, &out, &errs
}

// TestHistoryOwnerWhoseFirstEventCameBetweenTheReadsIsNoGap: a group
// whose first event is stored after history read the events and before
// it read the owners view was told from the view alone, GAP maybe, as if
// its events had been dropped (found by a review). Its events are
// stored before the view names its owner: they tell its history, without
// a gap.
func TestHistoryOwnerWhoseFirstEventCameBetweenTheReadsIsNoGap(t *testing.T) {
	t.Parallel() // waits on the server, not the CPU
	url, s := jetStreamSink(t)
	g := uniq(t)
	write(t, s, story(g+"-a")...)
	a, _, errs := historyApp()
	sf := &sourceFlags{nats: []string{url}}
	read := a.ownersOnce(context.Background(), sf, "nats", "")
	var h *historyOut
	h = a.newHistoryOut(context.Background(), sf, "nats", nil, "", func() (map[string]ownerNow, error) {
		if h.seen[g+"-a"] && !h.seen[g+"-b"] {
			write(t, s, story(g+"-b")...) // between the two reads
		}
		return read()
	}, 200_000, true, window{})
	defer h.rows.close()
	if err := a.eachBatch(context.Background(), sf, "nats", nil, "", 200_000, h.batch); err != nil {
		t.Fatal(err)
	}
	if err := h.unheard(); err != nil {
		t.Fatal(err)
	}
	var b []audit.Tenure
	for _, r := range h.rows.held {
		if r.Group == g+"-b" {
			b = append(b, r)
		}
	}
	if len(b) != 2 || b[0].Gap || b[1].Gap || b[0].Owner.ID != "alpha" || b[1].Owner.ID != "bravo" {
		t.Errorf("rows of %s, whose first event came between the reads: %+v; want alpha's and bravo's, no gap\n%s", g+"-b", b, errs)
	}
}

// TestHistorySaysInItsOutputThatTheOwnersViewCouldNotBeRead: a value in
// the owners bucket that is no owner herald wrote hides that group's
// owner; with its events dropped, history showed nothing of the group
// and said so only in a warning on standard error (found by a review).
// The table now ends with a note saying what is missing and what to do.
func TestHistorySaysInItsOutputThatTheOwnersViewCouldNotBeRead(t *testing.T) {
	t.Parallel() // waits on processes, not the CPU
	url, s := jetStreamSink(t)
	g := uniq(t)
	write(t, s, story(g+"-a")...)
	write(t, s, story(g+"-b")...)
	dropEvents(t, s, g+"-b")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := s.JetStream().KeyValue(ctx, jetstream.DefaultBucket)
	if err == nil {
		_, err = kv.Put(ctx, publish.MustTokens(g+"-b"), []byte("{}"))
	}
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, code := heraldRun(t, nil, "history", "--nats", url)
	if code != 0 || !strings.Contains(out, "alpha") || !strings.Contains(out, "owners view") || !strings.Contains(out, "run history again") {
		t.Errorf("history with an unreadable owners value: exit %d, want the rows and a note on the owners view, what may be missing and what to do:\n%s%s", code, out, stderr)
	}
	page := filepath.Join(t.TempDir(), "view.html")
	if _, stderr, code := heraldRun(t, nil, "history", "--nats", url, "--html", page); code != 0 {
		t.Fatalf("history --html: exit %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), "owners view") {
		t.Errorf("history --html with an unreadable owners value: the page carries no note on the owners view (%v)", err)
	}
}

// TestOwnersNoteSaysWhatIsMissingAndWhatToDo: an owners view that could
// not be read at all, or held values that are no owners, gives a note
// naming the bucket or topic, what the rows lack and what to do; one read
// whole, or audit logs (no view), none.
func TestOwnersNoteSaysWhatIsMissingAndWhatToDo(t *testing.T) {
	view := func(v map[string]ownerNow, err error) func() (map[string]ownerNow, error) {
		return func() (map[string]ownerNow, error) { return v, err }
	}
	for _, c := range []struct {
		src    string
		owners func() (map[string]ownerNow, error)
		want   []string
	}{
		{"nats", view(nil, errors.New("timed out")), []string{"herald_owners", "timed out", "missing from these rows", "not confirmed", "run history again"}},
		{"kafka", view(map[string]ownerNow{unreadableGroups: {}}, nil), []string{"herald.owners", "no owner herald wrote", "missing from these rows", "run history again"}},
		{"nats", view(map[string]ownerNow{"/g": {node: "n"}}, nil), nil},
		{"", nil, nil},
	} {
		note := ownersNote(c.src, c.owners)
		for _, w := range c.want {
			if !strings.Contains(note, w) {
				t.Errorf("%s: note %q lacks %q", c.src, note, w)
			}
		}
		if (note == "") != (c.want == nil) {
			t.Errorf("%s: note %q, want one: %v", c.src, note, c.want != nil)
		}
	}
}

// TestHistoryJSONWarnsThatTheOwnersViewCouldNotBeRead: with --json the
// warning on standard error is all that says the owners view could not
// be read, and so that owners whose events were all dropped are left out.
// Only the judging of an open tenure warned of it: with none told from
// the events (retention dropped them all), history --json answered []
// and said nothing.
func TestHistoryJSONWarnsThatTheOwnersViewCouldNotBeRead(t *testing.T) {
	t.Parallel() // waits on processes, not the CPU
	url, s := jetStreamSink(t)
	g := uniq(t)
	write(t, s, story(g)...)
	dropEvents(t, s, g)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.JetStream().DeleteKeyValue(ctx, jetstream.DefaultBucket); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := heraldRun(t, nil, "history", "--json", "--nats", url)
	if code != 0 || strings.TrimSpace(out) != "[]" || !strings.Contains(stderr, "could not read the owners view") {
		t.Errorf("history --json with no owners bucket: exit %d, want [] and a warning that the owners view could not be read:\n%s%s", code, out, stderr)
	}
}
