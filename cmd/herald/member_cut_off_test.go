package main

import (
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestCommandOnAMemberCutOffStopsBeforeTheNextStarts: the holder's herald
// is connected to a ZooKeeper follower that is cut off from the rest of
// the ensemble, its own link to it up, so the follower answers its pings
// until it gives the leader up (syncLimit × tickTime, 2.5 s here), while
// the leader expires the holder's session (1.5 s) and the next herald, on
// another member, starts its command. The holder's command, which
// ignores SIGTERM and leaves a process that does too, must be dead by
// then. It ran on beside the next for 2.7–4.4 s, every try (found by an
// adversarial test); herald now suspends a session whose leader has not
// answered a sync for half its timeout.
func TestCommandOnAMemberCutOffStopsBeforeTheNextStarts(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zkc := zktest.ForTest(t, zkserver.Config{Nodes: 3, Isolatable: true, TickTime: 250 * time.Millisecond})
	for _, verb := range []string{"lock", "run"} {
		t.Run(verb, func(t *testing.T) {
			followers, err := zkc.Followers(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			cut, other := followers[0], followers[1]
			on := func(i int) []string {
				return []string{"--zk", zkc.Member(i).Addr(), "--session-timeout", "1500ms", "--connect-timeout", "10s"}
			}
			flag := map[string]string{"lock": "--lock", "run": "--election"}[verb]
			g, env := uniq(t), pidFile(t)
			holder := start(t, env, append(on(cut), verb, flag, g, "--", "sh", "-c", leftover+"echo holding; wait")...)
			holder.waitOutput(t, "holding", 20*time.Second)
			next := start(t, env, append(on(other), verb, flag, g, "--", "sh", "-c", checkLeftover)...)
			waitQueued(t, on(other), g, 2, "the next owner never queued")
			if err := zkc.Isolate(cut, true); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = zkc.Isolate(cut, false) }()
			if code := next.wait(t, 30*time.Second); code != 0 || !strings.Contains(next.out.String(), "next owner: clean") {
				t.Fatalf("the command on the cut-off member ran on beside the next owner's (exit %d):\n%s\nholder:\n%s", code, next.out, holder.out)
			}
			if !strings.Contains(holder.out.String(), "not for the leader") {
				t.Errorf("the holder does not say its member stopped answering for the leader:\n%s", holder.out)
			}
		})
	}
}

// TestCommandOnAPausedMemberStopsBeforeTheNextStarts: the holder's
// ZooKeeper member is frozen (SIGSTOP) rather than cut off, and its herald
// knows no other member, so its session expires and the next herald, on
// another member, starts. The holder's command, which ignores SIGTERM and
// leaves a process that does too, must be dead by then.
func TestCommandOnAPausedMemberStopsBeforeTheNextStarts(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zkc := zktest.ForTest(t, zkserver.Config{Nodes: 3, TickTime: 250 * time.Millisecond})
	followers, err := zkc.Followers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	paused, other := followers[0], followers[1]
	on := func(i int) []string {
		return []string{"--zk", zkc.Member(i).Addr(), "--session-timeout", "1500ms", "--connect-timeout", "10s"}
	}
	g, env := uniq(t), pidFile(t)
	holder := start(t, env, append(on(paused), "run", "--election", g, "--", "sh", "-c", leftover+"echo holding; wait")...)
	holder.waitOutput(t, "holding", 20*time.Second)
	next := start(t, env, append(on(other), "run", "--election", g, "--", "sh", "-c", checkLeftover)...)
	waitQueued(t, on(other), g, 2, "the next owner never queued")
	if err := zkc.Member(paused).Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = zkc.Member(paused).Resume() }()
	if code := next.wait(t, 30*time.Second); code != 0 || !strings.Contains(next.out.String(), "next owner: clean") {
		t.Fatalf("the command on the paused member ran on beside the next owner's (exit %d):\n%s\nholder:\n%s", code, next.out, holder.out)
	}
}
