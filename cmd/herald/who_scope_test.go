package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWhoJSONSaysNoLongerConfirmed: the bridge that wrote the owner is
// restarted under the same --source for another group only, so its
// heartbeats leave the group out. who prints "no longer confirmed (…)"
// and --json has no "confirmed"; before, nothing in the JSON told a
// script that the value had been confirmed (publish.Freshness.OutOfScope
// was not marshalled), so it read like a value no bridge ever confirmed.
func TestWhoJSONSaysNoLongerConfirmed(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	st := newStaleSetup(t, "rescoped-bridge")
	if err := st.bridge.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := st.bridge.wait(t, 15*time.Second); code != 0 {
		t.Fatalf("bridge exit %d after SIGTERM", code)
	}
	other := start(t, nil, append([]string{"bridge", "--watch", st.group + "-other", "--nats", st.natsURL, "--kafka", st.kafka,
		"--heartbeat", "200ms", "--source", st.source}, zkFlags(t)...)...)
	for _, src := range [][]string{{"--nats", st.natsURL}, {"--kafka", st.kafka}} {
		var r whoReport
		var out, stderr string
		var code int
		// Stale at once (the stop); out of scope once the restarted
		// bridge's first heartbeat is read.
		if err := waitFor(30*time.Second, func() bool {
			out, stderr, code = heraldRun(t, nil, append([]string{"who", st.group, "--json"}, src...)...)
			r = whoReport{}
			return json.Unmarshal([]byte(out), &r) == nil && strings.Contains(r.StaleReason, "does not observe the group")
		}); err != nil {
			t.Fatalf("who %v --json never said the bridge no longer observes the group: exit %d:\n%s%s\nbridge:\n%s", src, code, out, stderr, other.out)
		}
		if code != exitStale || !r.Stale || r.Confirmed != nil || r.ConfirmedBy != st.source || r.Owner == nil || r.Owner.ID != "worker-1" {
			t.Errorf("who %v --json: exit %d, want %d, stale, no confirmed, worker-1 by %s:\n%s", src, code, exitStale, st.source, out)
		}
		if !r.NoLongerConfirmed || !strings.Contains(out, `"no_longer_confirmed":true`) {
			t.Errorf("who %v --json does not say the owner is no longer confirmed (it was, before the bridge's scope changed):\n%s", src, out)
		}
		if !strings.Contains(stderr, "no longer confirmed (") {
			t.Errorf("who %v --json: stderr does not say why it exits %d: %s", src, exitStale, stderr)
		}
	}
	if out, _, _ := heraldRun(t, nil, "who", "--help"); !strings.Contains(out, `"no_longer_confirmed"`) {
		t.Errorf("who --help does not name the no_longer_confirmed field:\n%s", out)
	}
}
