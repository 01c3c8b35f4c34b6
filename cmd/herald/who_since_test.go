package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// An owner a bridge first saw in a snapshot (it held before the bridge
// started) began its tenure at the time who --nats and --kafka give or
// before: who says so ("or earlier", since_at_most), as history marks it.
// An owner seen taking over live is given its since as is.
func TestWhoSinceFromASnapshotIsAnUpperBound(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	st := newStaleSetup(t, "since-bridge")
	srcs := [][]string{{"--nats", st.natsURL}, {"--kafka", st.kafka}}
	for _, src := range srcs {
		out, _, code := heraldRun(t, nil, append([]string{"who", st.group}, src...)...)
		if code != 0 || !strings.Contains(out, "or earlier (first seen in a snapshot, or seen late)") {
			t.Fatalf("who %v of an owner first seen in a snapshot: exit %d, want its since marked an upper bound:\n%s", src, code, out)
		}
	}
	next := campaignAsync(zkSession(t), st.group, "worker-2")
	waitQueued(t, zkFlags(t), st.group, 2, "worker-2 never queued")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := st.owner.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if h := <-next; h == nil {
		t.Fatal("worker-2 did not come to lead")
	}
	for _, src := range srcs {
		var r whoReport
		if err := waitFor(30*time.Second, func() bool {
			out, _, code := heraldRun(t, nil, append([]string{"who", st.group, "--json"}, src...)...)
			return code == 0 && json.Unmarshal([]byte(out), &r) == nil && r.Owner != nil && r.Owner.ID == "worker-2"
		}); err != nil {
			t.Fatalf("who %v never named worker-2 (last %+v)", src, r)
		}
		if r.SinceAtMost || r.Since == nil {
			t.Fatalf("who %v of an owner seen taking over live: %+v, want its since as is", src, r)
		}
		if out, _, _ := heraldRun(t, nil, append([]string{"who", st.group}, src...)...); strings.Contains(out, "or earlier") {
			t.Fatalf("who %v of an owner seen taking over live marks its since:\n%s", src, out)
		}
	}
}
