package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// TestFilteredStreamSendsOnlyItsRows: a live page filtered to one group
// of a bridge observing 10,000, 4,000 of which change, is sent that
// group's row alone, and its stream still ends the batch with the
// reader's place. Before, it was sent all 4,000 rows (986,748 bytes
// against 560) to drop.
// No server is needed: the groups are recorded as the bridge records
// their snapshots.
func TestFilteredStreamSendsOnlyItsRows(t *testing.T) {
	const n, changed = 10_000, 4_000
	b, err := New(Config{Servers: []string{"127.0.0.1:1"}, Discover: []string{"/x"}, Sinks: []publish.Sink{nopSink{}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.pipe.Close(context.Background()) })
	b.stallMu.Lock()
	b.caughtUp = time.Now() // a stall of another test's observer is not this bridge's
	b.stallMu.Unlock()
	ctx := context.Background()
	snapshot := func(i int) {
		g := fmt.Sprintf("/x/g%05d", i)
		owner := &elect.Participant{ID: fmt.Sprintf("c%05d", i), Node: "n_0000000000", Session: int64(i + 1), Czxid: int64(i + 1)}
		b.setGroup(ctx, g, GroupLive)
		b.truth.see(elect.Change{Kind: elect.Snapshot, Group: g, Recipe: elect.RecipeElection, Owner: owner, Zxid: int64(i + 1)})
		b.live.changed(g)
	}
	for i := range n {
		snapshot(i)
	}
	from := b.live.cursor(b.live.current())
	for i := range changed {
		snapshot(i)
	}
	srv := httptest.NewServer(b.Handler())
	t.Cleanup(srv.Close)
	all, allRows := firstBatch(t, srv.URL, from, "")
	one, rows := firstBatch(t, srv.URL, from, "/x/g00042")
	t.Logf("the first batch after %d changes of %d groups: %d bytes, %d rows unfiltered; %d bytes, rows %v filtered to one group",
		changed, n, all, len(allRows), one, rows)
	if len(allRows) != changed {
		t.Errorf("the unfiltered stream sent %d rows, want %d", len(allRows), changed)
	}
	if len(rows) != 1 || rows[0] != "/x/g00042" {
		t.Errorf("the stream filtered to /x/g00042 sent %d rows (%d bytes), want that group's alone", len(rows), one)
	}
	if one > 2048 {
		t.Errorf("the stream filtered to one group sent %d bytes, over 2 KB", one)
	}
}

// firstBatch reads a page's stream of bridge at base from the place from,
// filtered to q, up to the end of its first batch (its cursor event): the
// bytes read and the groups of the rows sent.
func firstBatch(t *testing.T, base, from, q string) (bytes int, groups []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/events?since="+url.QueryEscape(from)+"&q="+url.QueryEscape(q), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		bytes += len(line) + 1
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "group":
			var rw row
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &rw); err != nil {
				t.Fatal(err)
			}
			groups = append(groups, rw.Group)
		case strings.HasPrefix(line, "data: ") && event == "reload":
			t.Fatalf("the stream from %s asked for a reload", from)
		case line == "" && event == "cursor":
			return bytes, groups
		}
	}
	t.Fatalf("the stream ended before its first cursor: %v", sc.Err())
	return 0, nil
}
