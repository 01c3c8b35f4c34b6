//go:build unix

package main

import (
	"regexp"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/sinks/audit"
)

// TestHistorySaysASessionEnded: a `herald lock` frozen (SIGSTOP) until its
// session expires goes without a release; ZooKeeper deletes its node with
// its session node, and the bridge's history ends the tenure "session
// ended", where it said "unknown".
func TestHistorySaysASessionEnded(t *testing.T) {
	zk := zkFlags(t)
	g := uniq(t)
	url := bridgedToNATS(t, zk, g)
	holder := start(t, nil, append(zk, "lock", "--lock", g, "--id", "frozen", "--", "sh", "-c", "echo command-started; exec sleep 60")...)
	holder.waitOutput(t, "command-started", 20*time.Second)
	if err := signalPID(holder.cmd.Process.Pid, sigStop); err != nil {
		t.Fatal(err)
	}
	x := endedTenure(t, g, url, "the frozen holder")
	if err := signalPID(holder.cmd.Process.Pid, sigCont); err != nil {
		t.Fatal(err)
	}
	if x.Owner.ID != "frozen" || x.Reason != elect.ReasonSessionEnded || !x.UntilSeen {
		t.Errorf("the frozen holder's tenure %+v: want it ended, seen, reason %q", x, elect.ReasonSessionEnded)
	}
	if code := holder.wait(t, 20*time.Second); code != exitNotLeader {
		t.Errorf("the frozen holder exited %d on waking, want %d:\n%s", code, exitNotLeader, holder.out)
	}
}

// TestHistorySaysDeletedByHand: someone deletes the node of a running
// `herald lock`, or of a `herald run` leader, by hand. Its session lives
// on, and its session node (under the session root for a lock, in the
// election's office for run), untouched by the deletion, says so: the
// bridge's history ends the tenure "deleted", where it said "unknown",
// and the runner stops its command and exits as deposed.
func TestHistorySaysDeletedByHand(t *testing.T) {
	for _, verb := range []string{"lock", "run"} {
		t.Run(verb, func(t *testing.T) {
			zk := zkFlags(t)
			g := uniq(t)
			url := bridgedToNATS(t, zk, g)
			flag := map[string]string{"lock": "--lock", "run": "--election"}[verb]
			holder := start(t, nil, append(zk, verb, flag, g, "--id", "deposed", "--", "sh", "-c", `echo "command-on=$HERALD_NODE"; exec sleep 60`)...)
			// The command's own line, not herald's log line (which names
			// the node too, before the command starts): deleted earlier,
			// the runner exits at once, its session node goes with its
			// session, and nothing is left to tell a deletion by hand.
			node := outMatch(t, holder, `command-on=(\S+)`)
			if err := rawZK(t).Delete(g+"/"+node, -1); err != nil {
				t.Fatal(err)
			}
			if x := endedTenure(t, g, url, "the deposed owner"); x.Owner.ID != "deposed" || x.Owner.Node != node || x.Reason != elect.ReasonDeleted || !x.UntilSeen {
				t.Errorf("the deposed owner's tenure %+v: want %s ended, seen, reason %q", x, node, elect.ReasonDeleted)
			}
			if code := holder.wait(t, 20*time.Second); code != exitNotLeader {
				t.Errorf("the deposed owner exited %d, want %d:\n%s", code, exitNotLeader, holder.out)
			}
		})
	}
}

// bridgedToNATS starts a bridge that publishes group g to a NATS server
// of its own, and returns the server's URL once the bridge is active.
// g's parent is not made first: a bridge that finds even it missing
// counts the group's making at the nearest ancestor that exists, so the
// first owner follows no gap (run alone, on a fresh server, it did).
func bridgedToNATS(t *testing.T, zk []string, g string) string {
	t.Helper()
	url := natsserver.Start(t).URL()
	br := start(t, nil, append([]string{"bridge", "--watch", g, "--nats", url, "--source", "bridge-1", "--http", "127.0.0.1:0"}, zk...)...)
	waitRole(t, waitMatch(t, br, regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`), 30*time.Second), "active")
	return url
}

// endedTenure waits until the history of g, read from NATS at url, holds
// one tenure, ended, and returns it; who names its owner in the failure.
func endedTenure(t *testing.T, g, url, who string) audit.Tenure {
	t.Helper()
	var ts []audit.Tenure
	if err := waitFor(20*time.Second, func() bool {
		ts = historyJSON(t, g, "--nats", url)
		return len(ts) == 1 && !ts[0].Open()
	}); err != nil {
		t.Fatalf("%s's tenure never ended in the history: %+v", who, ts)
	}
	return ts[0]
}
