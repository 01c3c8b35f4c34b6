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
	early, late, path := rotatedStory(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts, batches, errs := historyInBatches(ctx, t, &sourceFlags{}, []string{path}, 2, &historyBatchTold, removeAt(t, 1, path+".000001"))
	if batches != 2 {
		t.Fatalf("history told %d batches, want 2 (one for each group)", batches)
	}
	checkOwnerGap(t, ts, late, "bravo", true, errs)
	checkGroupUnmarked(t, ts, early, errs)
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
	// The looks at offsets 0 and 1, the elections after.
	early, late, brokers, cl := kafkaGroups(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts, batches, errs := historyInBatches(ctx, t, &sourceFlags{kafka: brokers}, nil, 2, &historyBatchTold, func(batch int) {
		if batch == 1 {
			deleteRecords(ctx, t, cl, 0, 2)
		}
	})
	if batches != 2 {
		t.Fatalf("history told %d batches, want 2 (one for each group)", batches)
	}
	checkOwnerGap(t, ts, late, "bravo", true, errs)
	checkGroupUnmarked(t, ts, early, errs)
}

// TestHistoryInBatchesDoesNotMarkAGroupTheRemovedFileHeldNothingOf: the
// oldest rotated file, removed between the batches, held only the first
// batch's group; the second batch's group, whose events (a runner's, no
// bridge's first look) all lie in the live log, read whole both times.
func TestHistoryInBatchesDoesNotMarkAGroupTheRemovedFileHeldNothingOf(t *testing.T) {
	_, late, path := rotatedStory(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts, batches, errs := historyInBatches(ctx, t, &sourceFlags{}, []string{path}, 1, &historyBatchTold, removeAt(t, 1, path+".000001"))
	checkGroupUnmarked(t, ts, late, fmt.Sprintf("%d batches\n%s", batches, errs))
}

// TestHistoryFromKafkaInPassesDoesNotMarkAGroupTheDroppedRecordsHeldNothingOf:
// the oldest record, deleted between the passes, was the first batch's
// group's; the second batch's group, whose records (a runner's, no
// bridge's first look) all lie after it, read whole both times. Asked
// whether the partition dropped its oldest records, its first owner was
// marked GAP maybe.
func TestHistoryFromKafkaInPassesDoesNotMarkAGroupTheDroppedRecordsHeldNothingOf(t *testing.T) {
	// early's look at offset 0, the elections after.
	_, late, brokers, cl := kafkaGroups(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts, batches, errs := historyInBatches(ctx, t, &sourceFlags{kafka: brokers}, nil, 1, &historyBatchTold, func(batch int) {
		if batch == 1 {
			deleteRecords(ctx, t, cl, 0, 1)
		}
	})
	if batches != 2 {
		t.Fatalf("history told %d batches, want 2 (one for each group)", batches)
	}
	checkOwnerGap(t, ts, late, "bravo", false, errs)
}

// TestHistoryOfALogWhoseOldestFileWasRemovedAfterItWasReadDoesNotMarkIt:
// retention removed the oldest rotated file after history had read it
// whole (the logs held open), before it asked whether the oldest files
// were removed: asked of the directory then, it said so, and every group
// whose events begin with a change was GAP maybe, one the file held
// nothing of too. It is told from the files the read opened.
func TestHistoryOfALogWhoseOldestFileWasRemovedAfterItWasReadDoesNotMarkIt(t *testing.T) {
	_, late, path := rotatedStory(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts, reads, errs := historyInBatches(ctx, t, &sourceFlags{}, []string{path}, 100, &historyBatchRead, removeAt(t, 1, path+".000001"))
	if reads != 1 {
		t.Fatalf("history read %d batches, want 1", reads)
	}
	checkOwnerGap(t, ts, late, "bravo", false, errs)
}

// rotatedStory writes two groups to a rotating audit log: early, and
// late, which sorts after it so that its batch comes second. The oldest
// rotated file (.000001) holds early's first look, and late's too if
// lateLook; the live log holds the elections after, of alpha in early
// and bravo in late. It returns the groups and the live log's path.
func rotatedStory(t *testing.T, lateLook bool) (early, late, path string) {
	t.Helper()
	early, path, mkE := newStory(t)
	late = early + "-late"
	mkL := storyOf(late, time.Now().UTC().Add(-time.Minute))
	al, b := participant("alpha", 1), participant("bravo", 2)
	as := rotatingSink(t, path)
	looks := []publish.Event{mkE(publish.LeaderLost, nil, nil, 0, 5, true)}
	if lateLook {
		looks = append(looks, mkL(publish.LeaderLost, nil, nil, 0, 5, true))
	}
	write(t, as, looks...)
	write(t, as, mkE(publish.LeaderElected, al, nil, 10, 10, false), mkL(publish.LeaderElected, b, nil, 10, 10, false))
	if err := as.Close(); err != nil {
		t.Fatal(err)
	}
	return early, late, path
}

// kafkaGroups is rotatedStory's two groups in a Kafka of one partition:
// early's look at offset 0 (late's at 1 if lateLook), the elections
// after. It returns the groups, the brokers and a client that deletes
// records.
func kafkaGroups(t *testing.T, lateLook bool) (early, late string, brokers []string, cl *kgo.Client) {
	t.Helper()
	early = uniq(t)
	late = early + "-late"
	now := time.Now().UTC().Add(-time.Minute)
	mkE, mkL := storyOf(early, now), storyOf(late, now)
	al, b := participant("alpha", 1), participant("bravo", 2)
	evs := []publish.Event{mkE(publish.LeaderLost, nil, nil, 0, 5, true)}
	if lateLook {
		evs = append(evs, mkL(publish.LeaderLost, nil, nil, 0, 5, true))
	}
	evs = append(evs, mkE(publish.LeaderElected, al, nil, 10, 10, false), mkL(publish.LeaderElected, b, nil, 10, 10, false))
	brokers, cl = kafkaStory(t, evs...)
	return early, late, brokers, cl
}

// removeAt is a batch hook for historyInBatches that removes file as
// batch at is handed on, as retention would.
func removeAt(t *testing.T, at int, file string) func(batch int) {
	return func(batch int) {
		if batch == at {
			if err := os.Remove(file); err != nil {
				t.Error(err)
			}
		}
	}
}

// historyInBatches is history's tenures of every group in sf's sources
// and paths, holding held events, with at called each time *hook (a test
// hook history calls: a batch read or told, a read of a stream begun)
// fires, counted from 1. It returns that count and history's stderr.
func historyInBatches(ctx context.Context, t *testing.T, sf *sourceFlags, paths []string, held int, hook *func(), at func(batch int)) ([]audit.Tenure, int, string) {
	t.Helper()
	n := 0
	*hook = func() { n++; at(n) }
	t.Cleanup(func() { *hook = nil })
	a, out, errs := historyApp()
	if err := a.history(ctx, sf, paths, "", held, true, window{}); err != nil {
		t.Fatalf("history: %v\n%s", err, errs)
	}
	var ts []audit.Tenure
	if err := json.Unmarshal(out.Bytes(), &ts); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	return ts, n, errs.String()
}

// checkOwnerGap fails t unless ts holds owner's tenure in group, marked
// GAP maybe if marked, and not if not.
func checkOwnerGap(t *testing.T, ts []audit.Tenure, group, owner string, marked bool, errs string) {
	t.Helper()
	found := false
	for _, tn := range ts {
		if tn.Group != group || tn.Owner.ID != owner {
			continue
		}
		found = true
		if tn.Gap != marked {
			t.Errorf("%s in %s marked GAP maybe: %v, want %v: %+v\n%s", owner, group, tn.Gap, marked, tn, errs)
		}
	}
	if !found {
		t.Errorf("no %s in %s among %+v", owner, group, ts)
	}
}

// checkGroupUnmarked fails t if a row of group is marked GAP maybe.
func checkGroupUnmarked(t *testing.T, ts []audit.Tenure, group, errs string) {
	t.Helper()
	for _, tn := range ts {
		if tn.Group == group && tn.Gap {
			t.Errorf("a row of %s, which lost nothing, is marked GAP maybe: %+v\n%s", group, tn, errs)
		}
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
	ts, batches, errs := historyInBatches(ctx, t, &sourceFlags{kafka: brokers}, nil, held, &historyBatchRead, deleteAt)
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
	_, late, brokers, cl := kafkaGroups(t, false)
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
	// The looks at offsets 0 and 1, the elections after.
	early, late, brokers, cl := kafkaGroups(t, true)
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
	_, late, path := rotatedStory(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts, batches, errs := historyInBatches(ctx, t, &sourceFlags{}, []string{path}, 1, &historyBatchTold, func(batch int) {
		if batch == 1 {
			// The rotation's rename; its new live log not opened yet.
			if err := os.Rename(path, path+".000002"); err != nil {
				t.Error(err)
			}
		}
	})
	if batches != 2 {
		t.Fatalf("history told %d batches, want 2 (one for each group)", batches)
	}
	checkNoGap(t, ts, late, "bravo", errs)
}
