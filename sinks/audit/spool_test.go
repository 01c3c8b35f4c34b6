package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"
)

// A Spool writes what WriteTable and encoding/json's Encoder write for the
// same rows, and removes its file on Close.
func TestSpoolWritesWhatTheTableAndTheEncoderWrite(t *testing.T) {
	ctx := context.Background()
	p1, p2 := twoBridgeLogs(t)
	all1, _ := ReadAll(ctx, p1, nil)
	all2, _ := ReadAll(ctx, p2, nil)
	ts := History(Merge(all1, all2))
	// Rows of every kind the table tells apart.
	ts[0].TwoOwners = true
	ts[1].Until, ts[1].Unconfirmed, ts[1].Confirmed = time.Time{}, true, h0.Add(time.Hour)
	ts[2].Until, ts[2].Unconfirmed = time.Time{}, true
	ts[3].UntilSeen, ts[3].Reason = false, ""
	ts = append(ts, Tenure{Group: "/дом", Missing: true, Gap: true, Until: h0.Add(time.Minute)})
	for _, rows := range [][]Tenure{ts, nil} {
		var table, js bytes.Buffer
		if err := WriteTable(&table, rows, time.Now()); err != nil {
			t.Fatal(err)
		}
		want := rows
		if want == nil {
			want = []Tenure{}
		}
		if err := json.NewEncoder(&js).Encode(want); err != nil {
			t.Fatal(err)
		}
		for _, asJSON := range []bool{false, true} {
			s, err := NewSpool(asJSON)
			if err != nil {
				t.Fatal(err)
			}
			// In two batches, as a history's come.
			if err := s.Add(rows[:len(rows)/2]...); err != nil {
				t.Fatal(err)
			}
			if err := s.Add(rows[len(rows)/2:]...); err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			n, err := s.WriteTo(&got)
			if err != nil || n != int64(got.Len()) || s.Rows() != len(rows) {
				t.Fatalf("WriteTo: %d bytes, %v, %d rows; wrote %d, added %d", n, err, s.Rows(), got.Len(), len(rows))
			}
			want := table.String()
			if asJSON {
				want = js.String()
			}
			if got.String() != want {
				t.Errorf("json %v, %d rows: the spool writes\n%s\nwant\n%s", asJSON, len(rows), got.String(), want)
			}
			name := s.f.Name()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(name); !os.IsNotExist(err) {
				t.Errorf("the spool's file %s is still there after Close: %v", name, err)
			}
		}
	}
}
