package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	gojson "github.com/goccy/go-json"

	"github.com/zkherald/herald/publish"
)

// batchGroups are the groups of the batch tests: plain, one whose name
// the log writes escaped (skimmed no further: decoded), and one in
// another script.
var batchGroups = []string{"/a", "/b", `/q"x`, "/c", "/дом", "/d"}

// twoBridgeLogs writes the story of TestMergeTwoLogs for each of
// batchGroups into two audit logs, as two bridges would, interleaving the
// groups and rotating the files every few events; then a malformed line
// in the middle of the first and a torn line at its end.
func twoBridgeLogs(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	var logs [2][]publish.Event
	for _, g := range batchGroups {
		in := func(e publish.Event) publish.Event {
			e.Group = g
			e.ID = ""
			return e.WithID()
		}
		logs[0] = append(logs[0],
			in(lev(publish.LockAcquired, "a", "", 10, 10, 0, false)),
			in(joined("a", "b", 10, 11, 100)),
			in(lev(publish.LockAcquired, "b", "", 15, 21, 2000, true)),
			in(lev(publish.LockReleased, "", "b", 15, 30, 2500, false)))
		logs[1] = append(logs[1],
			in(lev(publish.LockAcquired, "a", "", 10, 11, 50, true)),
			in(lev(publish.LockReleased, "b", "a", 10, 20, 400, false)),
			in(lev(publish.LockAcquired, "b", "a", 15, 20, 400, false)),
			in(lev(publish.LockReleased, "", "b", 15, 30, 2500, false)))
	}
	// Each bridge writes in time order, the groups interleaved.
	for i := range logs {
		slices.SortStableFunc(logs[i], func(a, b publish.Event) int { return a.Time.Compare(b.Time) })
	}
	var paths [2]string
	ctx := context.Background()
	for i, evs := range logs {
		paths[i] = filepath.Join(dir, fmt.Sprintf("bridge%d.log", i))
		s, err := New(paths[i], MaxSize(700), Logger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < len(evs); j += 3 {
			if err := s.Write(ctx, evs[j:min(j+3, len(evs))]); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	names, _, err := rotated(paths[0])
	if err != nil || len(names) < 3 {
		t.Fatalf("bridge 0's log rotated into %v (%v): want 3 files or more", names, err)
	}
	appendTo := func(name, text string) {
		f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	appendTo(names[1], `{"id":"x","type":"lock.acquired","group":"/b","zxid":`+"\n")
	appendTo(paths[0], `{"id":"y","type":"lock.acq`)
	return paths[0], paths[1]
}

// badLines is where the errors joined in err say lines are malformed,
// each as many times as it is named.
func badLines(err error) []string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		var le *LineError
		switch {
		case err == nil:
		case errors.As(err, &le) && errors.Unwrap(err) == nil && le == err:
			out = append(out, fmt.Sprintf("%s:%d", le.File, le.Line))
		default:
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				for _, e := range j.Unwrap() {
					walk(e)
				}
			}
		}
	}
	walk(err)
	sort.Strings(out)
	return out
}

// ReadBatches, whatever the budget, tells the history that reading every
// event at once tells: each group whole in one batch, the batches in the
// order of their groups, none holding more than the budget unless it is
// one group alone; each malformed line named once; and logs that fit in
// the budget read in one batch.
func TestReadBatchesTellsTheHistoryOfTheWholeLogs(t *testing.T) {
	ctx := context.Background()
	p1, p2 := twoBridgeLogs(t)
	all1, err1 := ReadAll(ctx, p1, nil)
	all2, err2 := ReadAll(ctx, p2, nil)
	if err2 != nil || len(badLines(err1)) != 1 {
		t.Fatalf("reading the logs whole: %v, %v: want the one malformed line of the first", err1, err2)
	}
	want := History(Merge(all1, all2))
	if len(want) != 2*len(batchGroups) {
		t.Fatalf("the whole logs tell %d tenures, want %d", len(want), 2*len(batchGroups))
	}
	for _, budget := range []int{1, 5, 8, 17, 47, 1 << 30} {
		var got []Tenure
		var last string
		calls := 0
		reads, err := ReadBatches(ctx, []string{p1, p2}, "", budget, func(logs [][]publish.Event) error {
			calls++
			groups := map[string]bool{}
			n := 0
			for _, l := range logs {
				for _, e := range l {
					groups[e.Group] = true
					n++
				}
			}
			if n > budget && len(groups) > 1 {
				t.Errorf("budget %d: a batch of %d events over %d groups", budget, n, len(groups))
			}
			for g := range groups {
				if g <= last {
					t.Errorf("budget %d: group %s in a batch after %s's", budget, g, last)
				}
			}
			for g := range groups {
				last = max(last, g)
			}
			got = append(got, History(Merge(logs...))...)
			return nil
		})
		if err != nil {
			t.Fatalf("budget %d: %v", budget, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("budget %d: the batches tell\n%+v\nwant\n%+v", budget, got, want)
		}
		if budget >= len(all1)+len(all2) && calls != 1 {
			t.Errorf("budget %d: %d batches for logs of %d events, want 1", budget, calls, len(all1)+len(all2))
		}
		if budget < len(all1)+len(all2) && calls < 2 {
			t.Errorf("budget %d: %d batches for logs of %d events, want more", budget, calls, len(all1)+len(all2))
		}
		if len(reads) != 2 || reads[0].Path != p1 || reads[1].Path != p2 {
			t.Fatalf("budget %d: reads %+v, want one for each log in order", budget, reads)
		}
		if got, want := badLines(reads[0].Malformed), badLines(err1); !slices.Equal(got, want) || reads[1].Malformed != nil {
			t.Errorf("budget %d: malformed lines %v and %v, want %v once and none", budget, got, reads[1].Malformed, want)
		}
		if reads[0].Records != int64(len(all1)) || reads[1].Records != int64(len(all2)) {
			t.Errorf("budget %d: records %d and %d, want %d and %d", budget, reads[0].Records, reads[1].Records, len(all1), len(all2))
		}
	}
}

// One group asked for is read once, whatever the budget, and only its
// events are handed over.
func TestReadBatchesOneGroupInOneBatch(t *testing.T) {
	ctx := context.Background()
	p1, p2 := twoBridgeLogs(t)
	only := func(e publish.Event) bool { return e.Group == "/дом" }
	want1, _ := ReadAll(ctx, p1, only)
	want2, _ := ReadAll(ctx, p2, only)
	calls := 0
	_, err := ReadBatches(ctx, []string{p1, p2}, "/дом", 1, func(logs [][]publish.Event) error {
		calls++
		if !reflect.DeepEqual(logs, [][]publish.Event{want1, want2}) {
			t.Errorf("the group's batch:\n%+v\nwant\n%+v", logs, [][]publish.Event{want1, want2})
		}
		return nil
	})
	if err != nil || calls != 1 {
		t.Fatalf("%d batches, %v: want 1", calls, err)
	}
}

// fn's error, ctx ending and a log that is not there stop the read.
func TestReadBatchesStops(t *testing.T) {
	p1, p2 := twoBridgeLogs(t)
	stop := errors.New("enough")
	calls := 0
	_, err := ReadBatches(context.Background(), []string{p1, p2}, "", 5, func([][]publish.Event) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("fn failing: %d batches, %v: want 1 and its error", calls, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadBatches(ctx, []string{p1}, "", 5, func([][]publish.Event) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("ctx ended: %v, want context.Canceled", err)
	}
	missing := filepath.Join(t.TempDir(), "none.log")
	if _, err := ReadBatches(context.Background(), []string{p1, missing}, "", 5, func([][]publish.Event) error { return nil }); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a log not there: %v, want os.ErrNotExist", err)
	}
}

// skimGroup gives a group only where the decoder reads the same one, and
// otherwise says it cannot tell.
func TestSkimGroupAgreesWithTheDecoder(t *testing.T) {
	for _, c := range []struct {
		line string
		want string // "" when skimGroup cannot tell
	}{
		{`{"id":"1","type":"lock.acquired","group":"/a","owner":{"id":"x"}}`, "/a"},
		{`{"id":"1","group":"/дом"}`, "/дом"},
		{`{"id":"1","group":"/q\"x"}`, ""},           // escaped
		{`{"id":"1","group":"/a\u0041"}`, ""},        // escaped
		{`{"id":"1","group" : "/a"}`, ""},            // not as herald writes it
		{`{"id":"1","Group":"/b","group":"/a"}`, ""}, // two keys a decoder matches
		{`{"id":"1","group":"/a","GROUP":"/b"}`, ""},
		{`{"id":"1","owner":{"group":"/b"},"group":"/a"}`, ""},
		{`{"id":"x\"group\":\"/b","group":"/a"}`, ""}, // escaped
		{`{"id":"1","gr\u006fup":"/b","owner":{"group":"/a"}}`, ""},
		{`{"id":"1","reason":"group","group":"/a"}`, "/a"},
		{`{"id":"1"}`, ""},
		{`{"id":"1","group":"/a`, ""},
		{"{\"group\":\"/a\xff\"}", ""},
	} {
		g, ok := skimGroup([]byte(c.line))
		if ok != (c.want != "") || string(g) != c.want {
			t.Errorf("skimGroup(%s) = %q, %v; want %q", c.line, g, ok, c.want)
		}
	}
}

// FuzzSkimGroup: whenever skimGroup names a group and the line is an
// event (the decoder reads it and it is valid), they name the same group.
func FuzzSkimGroup(f *testing.F) {
	for _, s := range []string{
		`{"id":"1","type":"lock.acquired","group":"/a"}`,
		`{"id":"1","Group":"/b","group":"/a"}`,
		`{"id":"x\"group\":\"/b","group":"/a"}`,
		`{"id":"1","type":"lock.acquired","gr\u006fup":"/b","owner":{"group":"/a","id":"o"}}`,
		`{"group":"/a","group":"/b"}`,
		`{"owner":{"group":"/b"},"group":"/a"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		g, ok := skimGroup(line)
		if !ok {
			return
		}
		var e publish.Event
		if err := gojson.Unmarshal(line, &e); err != nil || e.Validate() != nil {
			return
		}
		if e.Group != string(g) {
			t.Fatalf("skimGroup(%q) = %q, the decoder reads %q", line, g, e.Group)
		}
	})
}

// A line longer than the reader's buffer (an event with a long note) is
// read whole, by ReadAll and by ReadBatches.
func TestReaderReadsLinesLongerThanItsBuffer(t *testing.T) {
	long := lev(publish.LockAcquired, "a", "", 10, 10, 0, false)
	long.Note = strings.Repeat("ü", 100<<10)
	long = long.WithID()
	evs := viaLog(t, long, lev(publish.LockReleased, "", "a", 10, 11, 100, false))
	if len(evs) != 2 || evs[0].Note != long.Note {
		t.Fatalf("read back %d events, the first with a note of %d bytes; want 2, %d", len(evs), len(evs[0].Note), len(long.Note))
	}
}
