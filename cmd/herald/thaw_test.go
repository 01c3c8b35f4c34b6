package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
	hjs "github.com/zkherald/herald/sinks/jetstream"
)

// TestThawedBridgeConfirmsOnlyWhatItPublished: a bridge frozen (SIGSTOP)
// while a lock was released hears the release when it thaws, and must
// publish it before its next active heartbeat claims "every change before
// T is stored": a heartbeat stored first would have readers take the gone
// holder for the current, fresh owner until the release lands.
func TestThawedBridgeConfirmsOnlyWhatItPublished(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zktest.Shared(t)
	url := natsserver.Start(t).URL()
	g := uniq(t)
	_, held := heldLock(t, zk.Addrs(), g)
	ctx := context.Background()
	b := start(t, nil, "bridge", "--zk", zk.ConnectString(), "--watch", g, "--nats", url, "--heartbeat", "200ms",
		"--source", "thawed", "--http", "127.0.0.1:0", "--log-level", "debug")
	waitMatch(t, b, regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`), 30*time.Second)
	js := natsserver.JetStream(t, url)
	ownerKV := func() jetstream.KeyValue {
		kv, err := js.KeyValue(ctx, hjs.DefaultBucket)
		if err != nil {
			return nil
		}
		return kv
	}
	key := publish.MustTokens(g)
	if err := waitFor(20*time.Second, func() bool {
		kv := ownerKV()
		if kv == nil {
			return false
		}
		e, err := kv.Get(ctx, key)
		return err == nil && len(e.Value()) > 0
	}); err != nil {
		t.Fatal("the bridge never wrote the holder")
	}

	// Running for a while, confirming: an active heartbeat is stored.
	if err := waitFor(20*time.Second, func() bool {
		kv, err := js.KeyValue(ctx, hjs.DefaultBridgesBucket)
		if err != nil {
			return false
		}
		e, err := kv.Get(ctx, publish.BridgeKey("thawed"))
		if err != nil {
			return false
		}
		h, err := publish.DecodeHeartbeat(e.Value())
		return err == nil && h.State == publish.BridgeActive
	}); err != nil {
		t.Fatal("the bridge never confirmed its values")
	}
	if err := signalPID(b.cmd.Process.Pid, sigStop); err != nil {
		t.Fatal(err)
	}
	defer signalPID(b.cmd.Process.Pid, sigCont)
	time.Sleep(300 * time.Millisecond) // past the heartbeat the bridge may have been writing
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	time.Sleep(2 * time.Second)
	if err := signalPID(b.cmd.Process.Pid, sigCont); err != nil {
		t.Fatal(err)
	}

	// The release as stored (the key's delete marker), and the first
	// active heartbeat that claims a time after the release.
	var stored time.Time
	if err := waitFor(20*time.Second, func() bool {
		st, err := js.Stream(ctx, "KV_"+hjs.DefaultBucket)
		if err != nil {
			return false
		}
		m, err := st.GetLastMsgForSubject(ctx, "$KV."+hjs.DefaultBucket+"."+key)
		if err != nil || m.Header.Get("KV-Operation") != "DEL" {
			return false
		}
		stored = m.Time
		return true
	}); err != nil {
		t.Fatal("the thawed bridge never stored the release")
	}
	hb, err := js.Stream(ctx, "KV_"+hjs.DefaultBridgesBucket)
	if err != nil {
		t.Fatal(err)
	}
	c, err := hb.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"$KV." + hjs.DefaultBridgesBucket + ".>"}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		m, err := c.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			t.Fatalf("no active heartbeat claiming a time after the release: %v", err)
		}
		h, err := publish.DecodeHeartbeat(m.Data())
		if err != nil || h.Source != "thawed" || h.State != publish.BridgeActive || !h.Time.After(released) {
			continue
		}
		md, err := m.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		if md.Timestamp.Before(stored) {
			t.Logf("bridge output:\n%s", b.out)
			t.Fatalf("the heartbeat claiming %s (after the release at %s) was stored at %s, before the release itself (%s): readers saw the gone holder as fresh",
				h.Time.Format(time.RFC3339Nano), released.Format(time.RFC3339Nano), md.Timestamp.Format(time.RFC3339Nano), stored.Format(time.RFC3339Nano))
		}
		return
	}
}

// TestReleaseSeenLateIsNotDatedExactly: a bridge frozen (SIGSTOP) while a
// lock was released hears the release only when it thaws. It must not date
// the end of the tenure then as if it had seen it happen: the event says
// the change may be older (not_before, no later than the freeze), and
// history gives the tenure's end as not seen, from that moment on, with its
// reason.
func TestReleaseSeenLateIsNotDatedExactly(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zktest.Shared(t)
	g := uniq(t)
	_, held := heldLock(t, zk.Addrs(), g)
	log := filepath.Join(t.TempDir(), "audit.log")
	url := natsserver.Start(t).URL()
	b := start(t, nil, "bridge", "--zk", zk.ConnectString(), "--watch", g, "--audit", log, "--http", "127.0.0.1:0",
		"--nats", url, "--source", "late-"+newRunID()) // not the default: parallel tests share the ZooKeeper's claims
	addr := waitMatch(t, b, regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`), 30*time.Second)
	events := func() []publish.Event {
		evs, _ := audit.ReadAll(context.Background(), log, nil) // none until the bridge writes the first
		return evs
	}
	if err := waitFor(20*time.Second, func() bool { return len(events()) > 0 }); err != nil {
		t.Fatal("the bridge never logged the holder")
	}
	// A sync the ZooKeeper leader answered after the snapshot (one every
	// eighth of the bridge's 10 s session): what the bridge vouches for
	// is as of the newest.
	time.Sleep(10*time.Second/8 + 500*time.Millisecond)
	frozen := time.Now()
	if err := signalPID(b.cmd.Process.Pid, sigStop); err != nil {
		t.Fatal(err)
	}
	defer signalPID(b.cmd.Process.Pid, sigCont)
	awaitStopped(t, b.cmd.Process.Pid)
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, next := heldLock(t, zk.Addrs(), g)
	time.Sleep(2500 * time.Millisecond)
	thawed := time.Now()
	if err := signalPID(b.cmd.Process.Pid, sigCont); err != nil {
		t.Fatal(err)
	}
	// The live page, asked at once, never shows the gone holder as holding:
	// it waits to catch up, or says it has not.
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if page := httpGet(t, "http://"+addr+"/"); heldRow(page, held.Node()) {
			t.Fatalf("the page served after the thaw shows the holder released during the freeze as holding:\n%s", page)
		}
	}
	var rel publish.Event
	if err := waitFor(20*time.Second, func() bool {
		for _, e := range events() {
			if e.Type == publish.LockReleased && e.Previous != nil && e.Previous.Node == held.Node() {
				rel = e
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the thawed bridge never logged the release:\n%s", b.out)
	}
	if rel.NotBefore == nil || rel.NotBefore.After(frozen) || rel.Time.Before(thawed) {
		t.Fatalf("the release seen after the thaw: time %v, not_before %v; want not_before no later than the freeze (%v)", rel.Time, rel.NotBefore, frozen)
	}
	var found bool
	for _, tn := range historyJSON(t, "--audit", log) {
		if tn.Owner.Node != held.Node() {
			continue
		}
		found = true
		if tn.UntilSeen || !tn.Until.Equal(*rel.NotBefore) || tn.Reason != elect.ReasonReleased || tn.Exact() {
			t.Errorf("history of the tenure released during the freeze: until %v (seen %v), reason %q, exact %v; want until ≥ %v, not seen, released",
				tn.Until, tn.UntilSeen, tn.Reason, tn.Exact(), rel.NotBefore)
		}
	}
	if !found {
		t.Errorf("history has no tenure of %s", held.Node())
	}
	out, _, _ := heraldRun(t, nil, "history", "--audit", log)
	if !strings.Contains(out, "released, seen late") {
		t.Errorf("history's table does not say the release was seen late:\n%s", out)
	}
	// The holder that took over during the freeze holds since at most the
	// time the bridge saw it: who says so, and so does the page.
	var w whoReport
	if err := waitFor(10*time.Second, func() bool {
		out, _, code := heraldRun(t, nil, "who", "--nats", url, "--json", g)
		return code == 0 && json.Unmarshal([]byte(out), &w) == nil && w.Owner != nil && w.Owner.Node == next.Node()
	}); err != nil {
		t.Fatalf("who --nats never named the holder that took over during the freeze")
	}
	if !w.SinceAtMost {
		t.Errorf("who --nats: since %v of the holder first seen after the thaw, not marked 'or earlier'", w.Since)
	}
	if page := httpGet(t, "http://"+addr+"/"); !strings.Contains(page, "≤ ") {
		t.Errorf("the page dates the holder that took over during the freeze as if seen:\n%s", page)
	}
}

// heldRow reports whether the live page shows node in a row marked held.
func heldRow(page, node string) bool {
	for _, line := range strings.Split(page, "<tr") {
		if strings.Contains(line, node) && strings.Contains(line, "state-held") {
			return true
		}
	}
	return false
}

// httpGet returns the body at url.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	_, body := getBody(t, url)
	return string(body)
}

// awaitStopped waits until every thread of pid, sent SIGSTOP, is stopped:
// the signal is only queued when kill returns, and on a loaded machine a
// bridge logged a release it heard 2 ms after the kill, before it stopped
// (a test failure in CI, not herald's). Where /proc is missing it waits
// for nothing.
func awaitStopped(t *testing.T, pid int) {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		tasks, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		stopped := true
		for _, task := range tasks {
			b, err := os.ReadFile(dir + "/" + task.Name() + "/stat")
			i := strings.LastIndexByte(string(b), ')')
			if err == nil && i >= 0 && !strings.HasPrefix(string(b[i:]), ") T") && !strings.HasPrefix(string(b[i:]), ") t") {
				stopped = false
			}
		}
		if stopped {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d not stopped 5 s after SIGSTOP", pid)
		}
	}
}
