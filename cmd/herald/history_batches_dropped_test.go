package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// TestHistoryInBatchesMarksAGroupWhoseOldestFileWasRemovedBetweenThem:
// history of every group in audit logs holding more events than
// --events-in-memory opens the logs again for each batch of groups.
// Whether the oldest rotated files were removed was asked once, at the
// first batch; retention removing the oldest file after that batch and
// before the next took a later group's first look, and its first owner,
// after a change, read as following nobody, GAP -. Each batch is asked
// of again: GAP maybe.
func TestHistoryInBatchesMarksAGroupWhoseOldestFileWasRemovedBetweenThem(t *testing.T) {
	early, path, mkE := newStory(t)
	late := early + "-late" // sorts after early: its batch comes second
	mkL := storyOf(late, time.Now().UTC().Add(-time.Minute))
	al, b := participant("alpha", 1), participant("bravo", 2)
	as := rotatingSink(t, path)
	write(t, as, mkE(publish.LeaderLost, nil, nil, 0, 5, true), mkL(publish.LeaderLost, nil, nil, 0, 5, true))
	write(t, as, mkE(publish.LeaderElected, al, nil, 10, 10, false), mkL(publish.LeaderElected, b, nil, 10, 10, false))
	if err := as.Close(); err != nil {
		t.Fatal(err)
	}
	batches := 0
	historyBatchTold = func() {
		if batches++; batches == 1 {
			if err := os.Remove(path + ".000001"); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { historyBatchTold = nil })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, out, errs := historyApp()
	if err := a.history(ctx, &sourceFlags{}, []string{path}, "", 2, true, window{}); err != nil {
		t.Fatalf("history: %v\n%s", err, errs)
	}
	if batches != 2 {
		t.Fatalf("history told %d batches, want 2 (one for each group)", batches)
	}
	var ts []audit.Tenure
	if err := json.Unmarshal(out.Bytes(), &ts); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	found := false
	for _, tn := range ts {
		if tn.Group == late && tn.Owner.ID == "bravo" {
			found = true
			if !tn.Gap {
				t.Errorf("bravo, first in a group whose look was removed before its batch was read, is not marked GAP maybe: %+v\n%s", tn, errs)
			}
		}
		if tn.Group == early && tn.Gap {
			t.Errorf("alpha, whose group's batch was read whole, is marked: %+v", tn)
		}
	}
	if !found {
		t.Errorf("no bravo among:\n%s", out)
	}
}

// TestHistoryFromKafkaInPassesMarksAGroupWhoseHeadWasDroppedBetweenThem:
// history of every group, more events than --events-in-memory, reads the
// events topic again for each batch of groups. Whether the partitions
// dropped their oldest records was asked once, at the first batch; records
// deleted (retention.ms, kafka-delete-records) after that batch and before
// the next took a later group's first look, and its first owner, after a
// change, read as following nobody, GAP -. Each batch is asked of again:
// GAP maybe.
func TestHistoryFromKafkaInPassesMarksAGroupWhoseHeadWasDroppedBetweenThem(t *testing.T) {
	kc := kafkatest.Start(t)
	ks, err := kafkasink.New(kafkasink.Config{Brokers: kc.Addrs(), Partitions: 1, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ks.Close() })
	early := uniq(t)
	late := early + "-late" // sorts after early: its batch comes second
	now := time.Now().UTC().Add(-time.Minute)
	mkE, mkL := storyOf(early, now), storyOf(late, now)
	al, b := participant("alpha", 1), participant("bravo", 2)
	// One partition: the looks at offsets 0 and 1, the elections after.
	write(t, ks, mkE(publish.LeaderLost, nil, nil, 0, 5, true), mkL(publish.LeaderLost, nil, nil, 0, 5, true),
		mkE(publish.LeaderElected, al, nil, 10, 10, false), mkL(publish.LeaderElected, b, nil, 10, 10, false))
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	batches := 0
	historyBatchTold = func() {
		if batches++; batches == 1 {
			deleteRecords(ctx, t, cl, 0, 2)
		}
	}
	t.Cleanup(func() { historyBatchTold = nil })
	a, out, errs := historyApp()
	if err := a.history(ctx, &sourceFlags{kafka: kc.Addrs()}, nil, "", 2, true, window{}); err != nil {
		t.Fatalf("history: %v\n%s", err, errs)
	}
	if batches != 2 {
		t.Fatalf("history told %d batches, want 2 (one for each group)", batches)
	}
	var ts []audit.Tenure
	if err := json.Unmarshal(out.Bytes(), &ts); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	found := false
	for _, tn := range ts {
		if tn.Group == late && tn.Owner.ID == "bravo" {
			found = true
			if !tn.Gap {
				t.Errorf("bravo, first in a group whose look was deleted before its pass, is not marked GAP maybe: %+v\n%s", tn, errs)
			}
		}
		if tn.Group == early && tn.Gap {
			t.Errorf("alpha, whose group's pass read it whole, is marked: %+v", tn)
		}
	}
	if !found {
		t.Errorf("no bravo among:\n%s", out)
	}
}

// TestHistoryInBatchesDoesNotMarkAGroupTheRemovedFileHeldNothingOf: the
// oldest rotated file, removed between the batches, held only the first
// batch's group; the second batch's group, whose events (a runner's, no
// bridge's first look) all lie in the live log, read whole both times.
func TestHistoryInBatchesDoesNotMarkAGroupTheRemovedFileHeldNothingOf(t *testing.T) {
	early, path, mkE := newStory(t)
	late := early + "-late" // sorts after early: its batch comes second
	mkL := storyOf(late, time.Now().UTC().Add(-time.Minute))
	al, b := participant("alpha", 1), participant("bravo", 2)
	as := rotatingSink(t, path)
	write(t, as, mkE(publish.LeaderLost, nil, nil, 0, 5, true))
	write(t, as, mkE(publish.LeaderElected, al, nil, 10, 10, false), mkL(publish.LeaderElected, b, nil, 10, 10, false))
	if err := as.Close(); err != nil {
		t.Fatal(err)
	}
	batches := 0
	historyBatchTold = func() {
		if batches++; batches == 1 {
			if err := os.Remove(path + ".000001"); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { historyBatchTold = nil })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, out, errs := historyApp()
	if err := a.history(ctx, &sourceFlags{}, []string{path}, "", 1, true, window{}); err != nil {
		t.Fatalf("history: %v\n%s", err, errs)
	}
	var ts []audit.Tenure
	if err := json.Unmarshal(out.Bytes(), &ts); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	for _, tn := range ts {
		if tn.Group == late && tn.Gap {
			t.Errorf("bravo, in a group the removed file held nothing of, marked GAP maybe (%d batches): %+v\n%s", batches, tn, errs)
		}
	}
}

// TestHistoryFromKafkaInPassesDoesNotMarkAGroupTheDroppedRecordsHeldNothingOf:
// the oldest record, deleted between the passes, was the first batch's
// group's; the second batch's group, whose records (a runner's, no
// bridge's first look) all lie after it, read whole both times. Asked
// whether the partition dropped its oldest records, its first owner was
// marked GAP maybe.
func TestHistoryFromKafkaInPassesDoesNotMarkAGroupTheDroppedRecordsHeldNothingOf(t *testing.T) {
	kc := kafkatest.Start(t)
	ks, err := kafkasink.New(kafkasink.Config{Brokers: kc.Addrs(), Partitions: 1, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ks.Close() })
	early := uniq(t)
	late := early + "-late" // sorts after early: its batch comes second
	now := time.Now().UTC().Add(-time.Minute)
	mkE, mkL := storyOf(early, now), storyOf(late, now)
	al, b := participant("alpha", 1), participant("bravo", 2)
	// One partition: early's look at offset 0, the elections after.
	write(t, ks, mkE(publish.LeaderLost, nil, nil, 0, 5, true),
		mkE(publish.LeaderElected, al, nil, 10, 10, false), mkL(publish.LeaderElected, b, nil, 10, 10, false))
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	batches := 0
	historyBatchTold = func() {
		if batches++; batches == 1 {
			deleteRecords(ctx, t, cl, 0, 1)
		}
	}
	t.Cleanup(func() { historyBatchTold = nil })
	a, out, errs := historyApp()
	if err := a.history(ctx, &sourceFlags{kafka: kc.Addrs()}, nil, "", 1, true, window{}); err != nil {
		t.Fatalf("history: %v\n%s", err, errs)
	}
	if batches != 2 {
		t.Fatalf("history told %d batches, want 2 (one for each group)", batches)
	}
	var ts []audit.Tenure
	if err := json.Unmarshal(out.Bytes(), &ts); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	found := false
	for _, tn := range ts {
		if tn.Group == late && tn.Owner.ID == "bravo" {
			found = true
			if tn.Gap {
				t.Errorf("bravo, in a group the deleted record held nothing of, marked GAP maybe: %+v\n%s", tn, errs)
			}
		}
	}
	if !found {
		t.Errorf("no bravo among:\n%s", out)
	}
}

// TestHistoryOfALogWhoseOldestFileWasRemovedAfterItWasReadDoesNotMarkIt:
// retention removed the oldest rotated file after history had read it
// whole (the logs held open), before it asked whether the oldest files
// were removed: asked of the directory then, it said so, and every group
// whose events begin with a change was GAP maybe, one the file held
// nothing of too. It is told from the files the read opened.
func TestHistoryOfALogWhoseOldestFileWasRemovedAfterItWasReadDoesNotMarkIt(t *testing.T) {
	early, path, mkE := newStory(t)
	late := early + "-late"
	mkL := storyOf(late, time.Now().UTC().Add(-time.Minute))
	al, b := participant("alpha", 1), participant("bravo", 2)
	as := rotatingSink(t, path)
	write(t, as, mkE(publish.LeaderLost, nil, nil, 0, 5, true))
	write(t, as, mkE(publish.LeaderElected, al, nil, 10, 10, false), mkL(publish.LeaderElected, b, nil, 10, 10, false))
	if err := as.Close(); err != nil {
		t.Fatal(err)
	}
	reads := 0
	historyBatchRead = func() {
		if reads++; reads == 1 {
			if err := os.Remove(path + ".000001"); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { historyBatchRead = nil })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, out, errs := historyApp()
	if err := a.history(ctx, &sourceFlags{}, []string{path}, "", 100, true, window{}); err != nil {
		t.Fatalf("history: %v\n%s", err, errs)
	}
	if reads != 1 {
		t.Fatalf("history read %d batches, want 1", reads)
	}
	var ts []audit.Tenure
	if err := json.Unmarshal(out.Bytes(), &ts); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	found := false
	for _, tn := range ts {
		if tn.Group == late && tn.Owner.ID == "bravo" {
			found = true
			if tn.Gap {
				t.Errorf("bravo, in a group the file removed after the read held nothing of, marked GAP maybe: %+v\n%s", tn, errs)
			}
		}
	}
	if !found {
		t.Errorf("no bravo among:\n%s", out)
	}
}

// kafkaStory starts a Kafka (one partition) and writes evs to it, in
// order; it returns the brokers and a client that deletes
// records.
func kafkaStory(t *testing.T, evs ...publish.Event) ([]string, *kgo.Client) {
	t.Helper()
	kc := kafkatest.Start(t)
	ks, err := kafkasink.New(kafkasink.Config{Brokers: kc.Addrs(), Partitions: 1, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ks.Close() })
	write(t, ks, evs...)
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kc.Addrs(), cl
}

// kafkaHistoryOf is history's tenures from the brokers' events topic,
// every group, holding held events, with deleteAt called as each batch
// read is handed on (the first is 1).
func kafkaHistoryOf(ctx context.Context, t *testing.T, brokers []string, held int, deleteAt func(batch int)) ([]audit.Tenure, string) {
	t.Helper()
	batches := 0
	historyBatchRead = func() { batches++; deleteAt(batches) }
	t.Cleanup(func() { historyBatchRead = nil })
	a, out, errs := historyApp()
	if err := a.history(ctx, &sourceFlags{kafka: brokers}, nil, "", held, true, window{}); err != nil {
		t.Fatalf("history: %v\n%s", err, errs)
	}
	var ts []audit.Tenure
	if err := json.Unmarshal(out.Bytes(), &ts); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	return ts, fmt.Sprintf("%d batches\n%s", batches, errs)
}

// TestHistoryFromKafkaWhoseHeadWasDroppedAfterItWasReadDoesNotMarkIt:
// the topic read in one pass, the oldest record (a look at the early
// group) deleted after the pass read it and before history asked whether
// the partitions dropped their oldest records: asked of the partitions'
// starts then, it said so, and the late group, whose events (a runner's,
// no bridge's first look) begin with a change and lost nothing, was GAP
// maybe. It is told from what the pass read: offset 0 on.
func TestHistoryFromKafkaWhoseHeadWasDroppedAfterItWasReadDoesNotMarkIt(t *testing.T) {
	early := uniq(t)
	late := early + "-late"
	now := time.Now().UTC().Add(-time.Minute)
	mkE, mkL := storyOf(early, now), storyOf(late, now)
	al, b := participant("alpha", 1), participant("bravo", 2)
	brokers, cl := kafkaStory(t, mkE(publish.LeaderLost, nil, nil, 0, 5, true),
		mkE(publish.LeaderElected, al, nil, 10, 10, false), mkL(publish.LeaderElected, b, nil, 10, 10, false))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts, errs := kafkaHistoryOf(ctx, t, brokers, 100, func(batch int) {
		if batch == 1 {
			deleteRecords(ctx, t, cl, 0, 1)
		}
	})
	checkNoGap(t, ts, late, "bravo", errs)
}

// TestHistoryFromKafkaDoesNotMarkAGroupWhoseRecordsWereDroppedAfterTheyWereRead:
// read in a pass for each group's batch, the late group's look deleted
// after its batch's pass had read it: it lost nothing, and is not marked.
func TestHistoryFromKafkaDoesNotMarkAGroupWhoseRecordsWereDroppedAfterTheyWereRead(t *testing.T) {
	early := uniq(t)
	late := early + "-late" // sorts after early: its batch comes second
	now := time.Now().UTC().Add(-time.Minute)
	mkE, mkL := storyOf(early, now), storyOf(late, now)
	al, b := participant("alpha", 1), participant("bravo", 2)
	// The looks at offsets 0 and 1, the elections after.
	brokers, cl := kafkaStory(t, mkE(publish.LeaderLost, nil, nil, 0, 5, true), mkL(publish.LeaderLost, nil, nil, 0, 5, true),
		mkE(publish.LeaderElected, al, nil, 10, 10, false), mkL(publish.LeaderElected, b, nil, 10, 10, false))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts, errs := kafkaHistoryOf(ctx, t, brokers, 2, func(batch int) {
		if batch == 2 {
			deleteRecords(ctx, t, cl, 0, 2)
		}
	})
	checkNoGap(t, ts, late, "bravo", errs)
	checkNoGap(t, ts, early, "alpha", errs)
}

// checkNoGap fails t unless ts holds owner's tenure in group, and no row
// of group is marked GAP maybe.
func checkNoGap(t *testing.T, ts []audit.Tenure, group, owner, errs string) {
	t.Helper()
	found := false
	for _, tn := range ts {
		if tn.Group != group {
			continue
		}
		found = found || tn.Owner.ID == owner
		if tn.Gap || tn.Missing {
			t.Errorf("a row of %s, which lost nothing it was read with, is marked GAP maybe: %+v\n%s", group, tn, errs)
		}
	}
	if !found {
		t.Errorf("no %s in %s among %+v", owner, group, ts)
	}
}

// TestHistoryInBatchesDoesNotMarkAGroupOfALiveLogRotatedAsABatchOpensIt:
// a batch opened the logs between a rotation's rename of the live log
// and its opening of the new one: no live log, its events in the newest
// rotated file. The live log the count had read counted as a removed
// file, and every group whose first event lay in it was GAP maybe.
func TestHistoryInBatchesDoesNotMarkAGroupOfALiveLogRotatedAsABatchOpensIt(t *testing.T) {
	early, path, mkE := newStory(t)
	late := early + "-late" // sorts after early: its batch comes second
	mkL := storyOf(late, time.Now().UTC().Add(-time.Minute))
	al, b := participant("alpha", 1), participant("bravo", 2)
	as := rotatingSink(t, path)
	write(t, as, mkE(publish.LeaderLost, nil, nil, 0, 5, true))
	write(t, as, mkE(publish.LeaderElected, al, nil, 10, 10, false), mkL(publish.LeaderElected, b, nil, 10, 10, false))
	if err := as.Close(); err != nil {
		t.Fatal(err)
	}
	batches := 0
	historyBatchTold = func() {
		if batches++; batches == 1 {
			// The rotation's rename; its new live log not opened yet.
			if err := os.Rename(path, path+".000002"); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { historyBatchTold = nil })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, out, errs := historyApp()
	if err := a.history(ctx, &sourceFlags{}, []string{path}, "", 1, true, window{}); err != nil {
		t.Fatalf("history: %v\n%s", err, errs)
	}
	if batches != 2 {
		t.Fatalf("history told %d batches, want 2 (one for each group)", batches)
	}
	var ts []audit.Tenure
	if err := json.Unmarshal(out.Bytes(), &ts); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	checkNoGap(t, ts, late, "bravo", errs.String())
}
